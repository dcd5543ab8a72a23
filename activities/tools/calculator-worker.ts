/**
 * The calculator's evaluator, in a worker thread of its own (calculator.ts starts it with a small heap and kills it
 * on a deadline, so `zeros(1e5, 1e5)` or a huge factorial cannot stall or exhaust the process that asked).
 *
 * mathjs with the functions that reach outside an expression disabled, as mathjs's security guide describes
 * (import, createUnit, evaluate, parse, simplify, derivative, resolve, compile, chain, reviver and the like), and
 * expressions that define functions (`f(x) = …`) refused before evaluation. Variables assigned inside an expression
 * live in a scope that is thrown away after it.
 *
 * Results are written as a person writes them (`answer`): integers in full below 10^22 (7006743, not 7.006743e+6;
 * 2^70 as 1180591620717411303424), fractions to 14 significant digits (0.1 + 0.2 is 0.3, not 0.30000000000000004),
 * an exponent only for magnitudes from 10^22 up or below 10^-7, units, matrices, complex numbers and fractions as
 * mathjs writes them with those numbers inside.
 */
import { all, create, type BigNumber, type MathNode } from 'mathjs';
import { serveCalls } from '../threads/deadline-worker.ts';

/** Significant digits of a result that is not an integer: past them, binary floating point only adds noise. */
const significantDigits = 14;
/** Integers below 10^22 are written in full; larger magnitudes, and those below 10^-7, with an exponent. */
const upperExponent = 22;
const lowerExponent = -7;
const largest = 10 ** upperExponent;
/**
 * An integer past 2^53 from plain numbers may have lost digits (3^40 comes out as 12157665459056928768, not …801):
 * it is evaluated again with 64-digit decimals, which is exact for integers, when the first evaluation was this
 * quick. Decimals are about 15 times slower, so a heavy calculation is not run twice against its deadline.
 */
const exactRetryWithinMs = 50;

const disabledFunctions = [
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
];

/** A mathjs instance with everything that reaches outside an expression disabled; evaluates in a fresh scope. */
function restrictedMath(number: 'number' | 'BigNumber') {
  const math = create(all!, { number, precision: 64 });
  const evaluate = math.evaluate.bind(math);
  const parse = math.parse.bind(math);
  const disabled = (name: string) => () => {
    throw new Error(`${name} is not available in the calculator`);
  };
  math.import(Object.fromEntries(disabledFunctions.map((name) => [name, disabled(name)])), { override: true });
  return {
    math,
    evaluate(expression: string): unknown {
      const tree: MathNode = parse(expression);
      tree.traverse((node) => {
        if (node.type === 'FunctionAssignmentNode') throw new Error('defining functions is not allowed');
      });
      const result: unknown = evaluate(expression, new Map());
      const last = Array.isArray((result as { entries?: unknown }).entries)
        ? (result as { entries: unknown[] }).entries.at(-1)
        : result;
      if (typeof last === 'function') throw new Error('the expression evaluates to a function');
      return last;
    },
  };
}

/** Everyday arithmetic: binary floating point, which every function supports and which is fast. */
const numbers = restrictedMath('number');
/** Exact integers (and decimals) for the re-evaluation of a large integer result. */
const decimals = restrictedMath('BigNumber');
const { math } = numbers;

/**
 * A result as text, each number in it (a matrix's elements, a unit's value, a complex number's parts) written by
 * `writeNumber`; `inexact` tells whether one of them was an integer too large for plain numbers to hold exactly.
 */
function write(value: unknown): { text: string; inexact: boolean } {
  let inexact = false;
  const text = math.format(value, (element: number | BigNumber) => {
    if (typeof element === 'number' && Number.isInteger(element) && !Number.isSafeInteger(element)) {
      inexact ||= Math.abs(element) < largest;
    }
    return writeNumber(element);
  });
  return { text, inexact };
}

function writeNumber(value: number | BigNumber): string {
  const magnitude = typeof value === 'number' ? Math.abs(value) : value.abs().toNumber();
  if (!Number.isFinite(magnitude)) return String(value);
  const isInteger = typeof value === 'number' ? Number.isInteger(value) : value.isInteger();
  if (isInteger && magnitude < largest) {
    // All the digits there are: a safe integer's or a decimal's are exact; a large plain number's are its shortest
    // faithful digits, padded with zeros (it is evaluated again with decimals when that is cheap: see `answer`).
    return math.format(value, { notation: 'fixed' });
  }
  return math.format(value, { precision: significantDigits, lowerExp: lowerExponent, upperExp: upperExponent });
}

export interface CalculatorRequest {
  expression: string;
}

function answer(expression: string): string {
  const started = performance.now();
  const result = write(numbers.evaluate(expression));
  if (!result.inexact || performance.now() - started > exactRetryWithinMs) return result.text;
  try {
    return write(decimals.evaluate(expression)).text;
  } catch {
    // A function without a decimal implementation (gamma of a fraction, random, …): the plain result stands.
    return result.text;
  }
}

// Ready once mathjs is loaded: a calculation's deadline starts when the thread can calculate, not while it loads.
// An expression that cannot be evaluated throws, and its message is the calculator's answer.
serveCalls(({ expression }: CalculatorRequest) => answer(expression));
