/**
 * The calculator's evaluator, in a worker thread of its own (calculator.ts starts it with a small heap and kills it
 * on a deadline, so `zeros(1e5, 1e5)` or a huge factorial cannot stall or exhaust the process that asked).
 *
 * mathjs with the functions that reach outside an expression disabled, as mathjs's security guide describes
 * (import, createUnit, evaluate, parse, simplify, derivative, resolve, compile, chain, reviver and the like), and
 * expressions that define functions (`f(x) = …`) refused before evaluation. Variables assigned inside an expression
 * live in a scope that is thrown away after it.
 */
import { all, create, type MathNode } from 'mathjs';
import { serveCalls } from '../threads/deadline-worker.ts';

const math = create(all!, { number: 'number' });
const evaluate = math.evaluate.bind(math);
const parse = math.parse.bind(math);
const disabled = (name: string) => () => {
  throw new Error(`${name} is not available in the calculator`);
};
math.import(
  Object.fromEntries(
    [
      'import',
      'createUnit',
      'evaluate',
      'parse',
      'simplify',
      'simplifyConstant',
      'simplifyCore',
      'derivative',
      'resolve',
      'compile',
      'chain',
      'reviver',
      'replacer',
      'parser',
      'rationalize',
      'leafCount',
      'symbolicEqual',
    ].map((name) => [name, disabled(name)]),
  ),
  { override: true },
);

export interface CalculatorRequest {
  expression: string;
}

function calculate(expression: string): string {
  const tree: MathNode = parse(expression);
  tree.traverse((node) => {
    if (node.type === 'FunctionAssignmentNode') throw new Error('defining functions is not allowed');
  });
  const result: unknown = evaluate(expression, new Map());
  const last = Array.isArray((result as { entries?: unknown }).entries)
    ? (result as { entries: unknown[] }).entries.at(-1)
    : result;
  if (typeof last === 'function') throw new Error('the expression evaluates to a function');
  return math.format(last, { precision: 14 });
}

// Ready once mathjs is loaded: a calculation's deadline starts when the thread can calculate, not while it loads.
// An expression that cannot be evaluated throws, and its message is the calculator's answer.
serveCalls(({ expression }: CalculatorRequest) => calculate(expression));
