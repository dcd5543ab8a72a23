/**
 * Structured output for the simulator: a JSON value generated from a JSON schema and the user's message, so a
 * caller that classifies by asking for scores (the agent router) gets scores that follow the message. The rule
 * is documented in ./reply.ts's header; this module implements it. Deterministic: same schema, same message,
 * same value.
 */
import { z } from 'zod';

/** Words too common to say anything about relevance. */
const stopWords = new Set([
  'about',
  'all',
  'also',
  'and',
  'any',
  'are',
  'but',
  'can',
  'could',
  'for',
  'from',
  'get',
  'had',
  'has',
  'have',
  'help',
  'how',
  'into',
  'its',
  'just',
  'like',
  'more',
  'most',
  'need',
  'not',
  'one',
  'our',
  'out',
  'please',
  'should',
  'some',
  'than',
  'that',
  'the',
  'their',
  'them',
  'then',
  'there',
  'they',
  'this',
  'very',
  'want',
  'was',
  'were',
  'what',
  'when',
  'where',
  'which',
  'who',
  'why',
  'will',
  'with',
  'would',
  'you',
  'your',
]);

/** Two words match when equal or when they share a prefix of at least this many letters ("programming", "program"). */
const sharedPrefixLetters = 5;
const quotedWords = 6;
const defaultRange = { minimum: 0, maximum: 10 };

/** The distinct significant words of a text: lowercased `[a-z0-9]+` runs of 3+ characters, minus stop words. */
export function significantWords(text: string): Set<string> {
  return new Set((text.toLowerCase().match(/[a-z0-9]+/g) ?? []).filter((w) => w.length >= 3 && !stopWords.has(w)));
}

function wordsMatch(left: string, right: string): boolean {
  if (left === right) return true;
  if (left.length < sharedPrefixLetters || right.length < sharedPrefixLetters) return false;
  return left.slice(0, sharedPrefixLetters) === right.slice(0, sharedPrefixLetters);
}

/** How many of the message's significant words occur in `text` (exactly or by a shared 5-letter prefix). */
export function overlap(message: Set<string>, text: string): number {
  const target = [...significantWords(text)];
  return [...message].filter((word) => target.some((candidate) => wordsMatch(word, candidate))).length;
}

/**
 * A relevance score in [minimum, maximum]: the minimum plus a quarter of the range (rounded up) per matching word,
 * capped at the maximum. On the default 0..10: 0, 3, 6, 9, then 10 from four matching words on.
 */
export function relevanceScore(matches: number, minimum: number, maximum: number): number {
  const step = Math.ceil((maximum - minimum) / 4);
  return Math.min(maximum, minimum + matches * step);
}

const schemaShape = z.object({
  type: z.union([z.string(), z.array(z.string())]).optional(),
  description: z.string().optional(),
  enum: z.array(z.unknown()).optional(),
  const: z.unknown().optional(),
  anyOf: z.array(z.unknown()).optional(),
  oneOf: z.array(z.unknown()).optional(),
  properties: z.record(z.string(), z.unknown()).optional(),
  items: z.unknown().optional(),
  minItems: z.number().int().min(0).optional(),
  maxItems: z.number().int().min(0).optional(),
  minimum: z.number().optional(),
  maximum: z.number().optional(),
});

type SchemaShape = z.infer<typeof schemaShape>;

/** The schema's type, lowercased (Gemini writes `OBJECT`), the first non-null one of a union. */
function typeOf(shape: SchemaShape): string {
  const types = (Array.isArray(shape.type) ? shape.type : shape.type === undefined ? [] : [shape.type]).map((type) =>
    type.toLowerCase(),
  );
  const type = types.find((item) => item !== 'null') ?? types[0];
  if (type !== undefined) return type;
  return shape.properties !== undefined ? 'object' : shape.items !== undefined ? 'array' : 'string';
}

/** A JSON value conforming to `schema`, shaped by the user's message (see ./reply.ts's header for the rule). */
export function structuredValue(schema: unknown, userText: string, name = 'value'): unknown {
  return valueOf(schema, { message: significantWords(userText), userText }, name, undefined);
}

interface Context {
  message: Set<string>;
  userText: string;
}

function valueOf(schema: unknown, context: Context, name: string, itemNumber: number | undefined): unknown {
  const parsed = schemaShape.safeParse(schema);
  if (!parsed.success) return stringValue(name, context, itemNumber);
  const shape = parsed.data;
  if (shape.const !== undefined) return shape.const;
  if (shape.enum !== undefined && shape.enum.length > 0) return bestEnumValue(shape.enum, context.message);
  const alternatives = shape.anyOf ?? shape.oneOf;
  if (alternatives !== undefined && alternatives.length > 0) {
    const nonNull = alternatives.find((alternative) => schemaShape.safeParse(alternative).data?.type !== 'null');
    return valueOf(nonNull ?? alternatives[0], context, name, itemNumber);
  }
  switch (typeOf(shape)) {
    case 'object':
      return Object.fromEntries(
        Object.entries(shape.properties ?? {}).map(([property, propertySchema]) => [
          property,
          valueOf(propertySchema, context, property, undefined),
        ]),
      );
    case 'array': {
      const count = Math.min(shape.minItems ?? 1, shape.maxItems ?? Number.POSITIVE_INFINITY);
      const itemShape = schemaShape.safeParse(shape.items).data;
      const numbered = itemShape === undefined || (typeOf(itemShape) === 'string' && itemShape.enum === undefined);
      return Array.from({ length: count }, (_, index) =>
        valueOf(shape.items, context, name, numbered ? index + 1 : undefined),
      );
    }
    case 'integer':
    case 'number':
      return numberValue(shape, name, context.message);
    case 'boolean':
      return true;
    case 'null':
      return null;
    default:
      return stringValue(name, context, itemNumber);
  }
}

function numberValue(shape: SchemaShape, name: string, message: Set<string>): number {
  const minimum = shape.minimum ?? defaultRange.minimum;
  const maximum = shape.maximum ?? Math.max(minimum, defaultRange.maximum);
  if (shape.description === undefined) return Math.min(maximum, shape.minimum ?? 1);
  return relevanceScore(overlap(message, `${name} ${shape.description}`), minimum, maximum);
}

function bestEnumValue(values: unknown[], message: Set<string>): unknown {
  let best = values[0];
  let bestScore = -1;
  for (const value of values) {
    const score = overlap(message, String(value));
    if (score > bestScore) {
      best = value;
      bestScore = score;
    }
  }
  return best;
}

function stringValue(name: string, context: Context, itemNumber: number | undefined): string {
  const words = context.userText.split(/\s+/).filter((word) => word !== '');
  const text = `Simulated ${name} about: ${words.slice(0, quotedWords).join(' ')}`.trim();
  return itemNumber === undefined ? text : `${text} (${itemNumber})`;
}

const instructionMarker = 'Respond with a single JSON object only';
const schemaMarker = 'JSON schema:';

/**
 * The response format our Anthropic adapter expresses as a system instruction (Anthropic's Messages API has no
 * response_format): `Respond with a single JSON object only…`, then `It must match this JSON schema: <schema>`
 * when there is a schema. Undefined when the system prompt carries no such instruction.
 */
export function formatFromInstruction(system: string): { schema?: unknown } | undefined {
  const at = system.indexOf(instructionMarker);
  if (at < 0) return undefined;
  const schemaAt = system.indexOf(schemaMarker, at);
  if (schemaAt < 0) return {};
  const schema = leadingJson(system.slice(schemaAt + schemaMarker.length));
  return schema === undefined ? {} : { schema };
}

/** The JSON object at the start of `text` (after blanks), read up to its closing brace; undefined if none. */
function leadingJson(text: string): unknown {
  const start = text.indexOf('{');
  if (start < 0 || text.slice(0, start).trim() !== '') return undefined;
  let depth = 0;
  let inString = false;
  for (let index = start; index < text.length; index++) {
    const character = text[index];
    if (inString) {
      if (character === '\\') index++;
      else if (character === '"') inString = false;
    } else if (character === '"') inString = true;
    else if (character === '{') depth++;
    else if (character === '}' && --depth === 0) {
      try {
        return JSON.parse(text.slice(start, index + 1));
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}
