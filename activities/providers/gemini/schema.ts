/** Converts JSON Schema (as OpenAI tools and response formats carry it) to the subset Gemini accepts. */
import { z } from 'zod';

const schemaObject = z.record(z.string(), z.unknown());

/** Keys Gemini's Schema object understands and that need no conversion. */
const keptKeys = new Set([
  'format',
  'title',
  'description',
  'nullable',
  'required',
  'minItems',
  'maxItems',
  'minProperties',
  'maxProperties',
  'minLength',
  'maxLength',
  'pattern',
  'minimum',
  'maximum',
  'propertyOrdering',
]);

/**
 * Gemini rejects the whole request on a key it does not know (`additionalProperties`, `$schema`, `strict`),
 * so unknown keys are dropped; `type: [x, 'null']` becomes `nullable`, `const` a one-value enum.
 */
export function toGeminiSchema(schema: Record<string, unknown>): Record<string, unknown> {
  const result: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    switch (key) {
      case 'type':
        Object.assign(result, convertType(value));
        break;
      case 'properties':
        result.properties = mapSchemas(value);
        break;
      case 'items':
        result.items = convertNested(value);
        break;
      case 'anyOf':
      case 'oneOf':
        if (Array.isArray(value)) result.anyOf = value.map(convertNested);
        break;
      case 'enum':
        // Gemini enums are string-only.
        if (Array.isArray(value) && value.every((item) => typeof item === 'string')) result.enum = value;
        break;
      case 'const':
        if (typeof value === 'string') result.enum = [value];
        break;
      default:
        if (keptKeys.has(key)) result[key] = value;
    }
  }
  return result;
}

/** True when an object schema declares no properties (Gemini rejects OBJECT parameters without any). */
export function hasNoProperties(schema: Record<string, unknown>): boolean {
  const properties = schemaObject.safeParse(schema.properties);
  return !properties.success || Object.keys(properties.data).length === 0;
}

function convertType(value: unknown): Record<string, unknown> {
  if (!Array.isArray(value)) return { type: value };
  const types = value.filter((type) => type !== 'null');
  return { type: types[0] ?? 'null', ...(types.length < value.length ? { nullable: true } : {}) };
}

function mapSchemas(value: unknown): Record<string, unknown> {
  const properties = schemaObject.safeParse(value);
  if (!properties.success) return {};
  return Object.fromEntries(Object.entries(properties.data).map(([name, schema]) => [name, convertNested(schema)]));
}

function convertNested(value: unknown): unknown {
  const nested = schemaObject.safeParse(value);
  return nested.success ? toGeminiSchema(nested.data) : value;
}
