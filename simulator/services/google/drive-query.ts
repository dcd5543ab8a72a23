/**
 * Drive's search query language (`files.list?q=`), parsed and evaluated for the simulated Drive: comparisons
 * `name|fullText contains 'x'`, `mimeType|name = 'x'` (and `!=`), `modifiedTime|createdTime > '2026-01-01T00:00:00'`
 * (and `<`, `<=`, `>=`), `trashed = true|false`, `'id' in parents`, `appProperties has { key='k' and value='v' }`,
 * combined with `and`, `or`, `not` and parentheses. Strings are single-quoted with `\'` and `\\` escapes. `name
 * contains` matches the start of a word of the name, as Drive does; `fullText contains` the name or the text anywhere.
 */

export interface QueryFile {
  name: string;
  mimeType: string;
  modifiedTime: string;
  createdTime: string;
  trashed: boolean;
  parents: string[];
  appProperties: Record<string, string>;
  /** The file's text, for fullText. */
  text: string;
}

type Node = (file: QueryFile) => boolean;

export class QueryError extends Error {}

type Token = { kind: 'string'; value: string } | { kind: 'word'; value: string } | { kind: 'symbol'; value: string };

function tokenize(query: string): Token[] {
  const tokens: Token[] = [];
  let index = 0;
  while (index < query.length) {
    const character = query[index]!;
    if (/\s/.test(character)) {
      index += 1;
    } else if (character === "'") {
      let value = '';
      index += 1;
      for (;;) {
        if (index >= query.length) throw new QueryError('unterminated string');
        const next = query[index]!;
        if (next === '\\') {
          value += query[index + 1] ?? '';
          index += 2;
        } else if (next === "'") {
          index += 1;
          break;
        } else {
          value += next;
          index += 1;
        }
      }
      tokens.push({ kind: 'string', value });
    } else if (/[(){}]/.test(character)) {
      tokens.push({ kind: 'symbol', value: character });
      index += 1;
    } else if (/[=!<>]/.test(character)) {
      const two = query.slice(index, index + 2);
      const symbol = ['!=', '<=', '>='].includes(two) ? two : character;
      if (symbol === '!') throw new QueryError('unexpected !');
      tokens.push({ kind: 'symbol', value: symbol });
      index += symbol.length;
    } else {
      const match = /^[A-Za-z0-9_.:-]+/.exec(query.slice(index));
      if (!match) throw new QueryError(`unexpected ${character}`);
      tokens.push({ kind: 'word', value: match[0] });
      index += match[0].length;
    }
  }
  return tokens;
}

export function parseDriveQuery(query: string): Node {
  const tokens = tokenize(query);
  let position = 0;
  const peek = () => tokens[position];
  const take = () => {
    const token = tokens[position++];
    if (!token) throw new QueryError('unexpected end of query');
    return token;
  };
  const expectSymbol = (value: string) => {
    const token = take();
    if (token.kind !== 'symbol' || token.value !== value) throw new QueryError(`expected ${value}`);
  };
  const expectWord = (value: string) => {
    const token = take();
    if (token.kind !== 'word' || token.value.toLowerCase() !== value) throw new QueryError(`expected ${value}`);
  };
  const isWord = (token: Token | undefined, value: string) =>
    token?.kind === 'word' && token.value.toLowerCase() === value;

  const parseOr = (): Node => {
    let left = parseAnd();
    while (isWord(peek(), 'or')) {
      take();
      const right = parseAnd();
      const previous = left;
      left = (file) => previous(file) || right(file);
    }
    return left;
  };
  const parseAnd = (): Node => {
    let left = parseUnary();
    while (isWord(peek(), 'and')) {
      take();
      const right = parseUnary();
      const previous = left;
      left = (file) => previous(file) && right(file);
    }
    return left;
  };
  const parseUnary = (): Node => {
    if (isWord(peek(), 'not')) {
      take();
      const inner = parseUnary();
      return (file) => !inner(file);
    }
    if (peek()?.kind === 'symbol' && peek()!.value === '(') {
      take();
      const inner = parseOr();
      expectSymbol(')');
      return inner;
    }
    return parseComparison();
  };
  const parseComparison = (): Node => {
    const first = take();
    if (first.kind === 'string') {
      expectWord('in');
      const field = take();
      if (field.kind !== 'word') throw new QueryError('expected a field after in');
      if (field.value === 'parents') return (file) => file.parents.includes(first.value);
      if (field.value === 'owners' || field.value === 'readers' || field.value === 'writers') return () => true;
      throw new QueryError(`unknown field ${field.value}`);
    }
    if (first.kind !== 'word') throw new QueryError('expected a field');
    const field = first.value;
    if (isWord(peek(), 'has')) {
      take();
      expectSymbol('{');
      expectWord('key');
      expectSymbol('=');
      const key = take();
      expectWord('and');
      expectWord('value');
      expectSymbol('=');
      const value = take();
      expectSymbol('}');
      if (key.kind !== 'string' || value.kind !== 'string') throw new QueryError('has wants strings');
      if (field !== 'appProperties' && field !== 'properties') throw new QueryError(`unknown field ${field}`);
      return (file) => file.appProperties[key.value] === value.value;
    }
    const operator = take();
    const operand = take();
    const text = operator.value.toLowerCase();
    const value = operand.kind === 'string' ? operand.value : operand.value.toLowerCase();
    switch (field) {
      case 'name':
        if (text === 'contains') {
          const needle = value.toLowerCase();
          return (file) =>
            file.name
              .toLowerCase()
              .split(/[^\p{L}\p{N}]+/u)
              .some((word) => word.startsWith(needle)) || file.name.toLowerCase().startsWith(needle);
        }
        return compare(text, (file) => file.name, value);
      case 'fullText': {
        if (text !== 'contains') throw new QueryError('fullText takes contains');
        const needle = value.toLowerCase();
        return (file) => `${file.name}\n${file.text}`.toLowerCase().includes(needle);
      }
      case 'mimeType':
        return compare(text, (file) => file.mimeType, value);
      case 'modifiedTime':
      case 'createdTime':
        return compare(text, (file) => Date.parse(file[field]), Date.parse(value));
      case 'trashed':
      case 'starred': {
        if (value !== 'true' && value !== 'false') throw new QueryError(`${field} is true or false`);
        const wanted = value === 'true';
        return compare(text, (file) => (field === 'trashed' ? file.trashed : false), wanted);
      }
      default:
        throw new QueryError(`unknown field ${field}`);
    }
  };
  const node = parseOr();
  if (position < tokens.length) throw new QueryError('unexpected text after the query');
  return node;
}

function compare<T extends string | number | boolean>(operator: string, read: (file: QueryFile) => T, value: T): Node {
  switch (operator) {
    case '=':
      return (file) => read(file) === value;
    case '!=':
      return (file) => read(file) !== value;
    case '<':
      return (file) => read(file) < value;
    case '<=':
      return (file) => read(file) <= value;
    case '>':
      return (file) => read(file) > value;
    case '>=':
      return (file) => read(file) >= value;
    default:
      throw new QueryError(`unsupported operator ${operator}`);
  }
}
