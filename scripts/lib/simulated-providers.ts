/** Every provider pointed at the simulator: what `npm start` does when no provider key is set. */
export function simulatedProviders(simulatorUrl: string): Record<string, string> {
  return {
    OPENAI_API_KEY: 'simulator',
    OPENAI_BASE_URL: `${simulatorUrl}/v1`,
    DEEPSEEK_API_KEY: 'simulator',
    DEEPSEEK_BASE_URL: `${simulatorUrl}/v1`,
    GROQ_API_KEY: 'simulator',
    GROQ_BASE_URL: `${simulatorUrl}/v1`,
    DASHSCOPE_API_KEY: 'simulator',
    DASHSCOPE_BASE_URL: `${simulatorUrl}/v1`,
    ANTHROPIC_API_KEY: 'simulator',
    ANTHROPIC_BASE_URL: simulatorUrl,
    GEMINI_API_KEY: 'simulator',
    GEMINI_BASE_URL: simulatorUrl,
  };
}
