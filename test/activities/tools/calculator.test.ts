/**
 * The calculator alone: a real expression engine (units, functions, matrices) with everything that reaches outside
 * an expression disabled, and a runaway expression stopped by its deadline or heap limit without harming the caller.
 */
import { describe, expect, it } from '@jest/globals';
import { calculatorTool, createCalculatorTool } from '../../../activities/tools/calculator.ts';
import { runTool } from '../../../activities/tools/runtime.ts';
import type { ToolContext } from '../../../activities/tools/tool.ts';

const context = {
  conversationId: 'calculator-test',
  settings: {},
  signal: new AbortController().signal,
} as ToolContext;
const calculate = async (expression: string) =>
  ((await calculatorTool.run({ expression }, context)) as { result: string }).result;

describe('calculator', () => {
  it.each([
    ['2 + 3 * 4', '14'],
    ['sqrt(16) + 2^10', '1028'],
    ['5 km to m', '5000 m'],
    ['det([1, 2; 3, 4])', '-2'],
    ['mean([3, 5, 8])', '5.3333333333333'],
    ['x = 3; x * 2', '6'],
  ])('evaluates %s', async (expression, result) => {
    expect(await calculate(expression)).toBe(result);
  });

  it.each([
    ['1234*5678+91', '7006743'], // an integer in full, not 7.006743e+6
    ['0.1 + 0.2', '0.3'], // no floating-point noise (0.30000000000000004)
    ['1/3', '0.33333333333333'],
    ['2^70', '1180591620717411303424'], // every digit, exact
    ['3^40', '12157665459056928801'], // exact although plain numbers lose its last digits
    ['1e21', '1000000000000000000000'],
    ['1e22', '1e+22'], // from 10^22 on, an exponent
    ['2^80', '1.2089258196146e+24'],
    ['1.5e-10', '1.5e-10'],
    ['0.000001234', '0.000001234'],
    ['5 km + 300 m', '5.3 km'],
    ['12 inch to cm', '30.48 cm'],
    ['sqrt(-4)', '2i'],
    ['(1 + 2i) * (3 - i)', '5 + 5i'],
    ['[0.1 + 0.2, 1/3; 2^70, 7]', '[[0.3, 0.33333333333333], [1180591620717411303424, 7]]'],
    ['fraction(1, 3) + fraction(1, 6)', '1/2'],
    ['bignumber(0.1) + bignumber(0.2)', '0.3'],
    ['gamma(0.5)', '1.7724538509055'],
  ])('writes %s as a person would: %s', async (expression, result) => {
    expect(await calculate(expression)).toBe(result);
  });

  it.each([
    ['import', 'import({x: 1}, {override: true})'],
    ['createUnit', 'createUnit("zork")'],
    ['evaluate', 'evaluate("1+1")'],
    ['parse', 'parse("1+1")'],
    ['function definitions', 'f(x) = x^2'],
    ['the Function constructor', 'cos.constructor("return process")()'],
  ])('refuses %s', async (_label, expression) => {
    await expect(calculate(expression)).rejects.toThrow(/cannot evaluate/);
  });

  it('does not keep variables between calls', async () => {
    await calculate('secret = 42');
    await expect(calculate('secret')).rejects.toThrow(/Undefined symbol/);
  });

  it('waits for a slow start-up, which the deadline does not count, and still stops a runaway at the deadline', async () => {
    // A start-up slower than a whole call was once allowed to take (5 s), as on a very busy machine.
    const slow = createCalculatorTool({ startupDelayMs: 6_000 });
    const run = (expression: string) => runTool(slow, JSON.stringify({ expression }), context);
    expect(await run('6*7')).toEqual({ ok: true, content: JSON.stringify({ expression: '6*7', result: '42' }) });
    // About 10 s of CPU in a few MiB: the 2 s deadline, counted from when it starts, ends it.
    const runaway = 'det(ones(600, 600) + diag(1:600))';
    expect(await run(runaway)).toEqual({
      ok: false,
      content: `calculator: cannot evaluate "${runaway}": the calculation took longer than 2 s`,
    });
  }, 60_000);

  it('stops a runaway expression and keeps working afterwards', async () => {
    // 3.2 GB of zeros: the heap limit or the deadline, whichever comes first.
    await expect(calculate('zeros(20000, 20000)')).rejects.toThrow(/cannot evaluate.*(ran out of memory|took longer)/);
    expect(await calculate('1 + 1')).toBe('2');
  });
});
