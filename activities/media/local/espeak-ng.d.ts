/** `@echogarden/espeak-ng-emscripten` ships no types: its default export starts the Emscripten module. */
declare module '@echogarden/espeak-ng-emscripten' {
  const initialize: (moduleArgument?: object) => Promise<unknown>;
  export default initialize;
}
