/**
 * The calculator alone: a real expression engine (units, functions, matrices) with everything that reaches outside
 * an expression disabled, and a runaway expression stopped by its deadline or heap limit without harming the caller.
 */
import { describe, expect, it } from '@jest/globals';
import { calculatorTool } from '../../../activities/tools/calculator.ts';
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

  it('stops a runaway expression and keeps working afterwards', async () => {
    const started = Date.now();
    await expect(calculate('zeros(20000, 20000)')).rejects.toThrow(/cannot evaluate/);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(await calculate('1 + 1')).toBe('2');
  }, 20_000);
});
