/** Google Docs documents as text, for the docs tools. */
import { z } from 'zod';

export const documentIdInput = z
  .string()
  .trim()
  .regex(/^[A-Za-z0-9_-]{10,200}$/, 'a document id (the long id in its URL, or from drive_search)')
  .describe('The document id (from drive_search or docs_create, or the long id in its URL)');

interface StructuralElement {
  paragraph?: { elements?: Array<{ textRun?: { content?: string } }> };
  table?: { tableRows?: Array<{ tableCells?: Array<{ content?: StructuralElement[] }> }> };
  tableOfContents?: { content?: StructuralElement[] };
}

export interface DocsDocument {
  documentId: string;
  title?: string;
  revisionId?: string;
  body?: { content?: StructuralElement[] };
}

/** The document's text: its paragraphs' runs in order, a table's cells separated by tabs, its rows by lines. */
export function documentText(document: DocsDocument): string {
  const walk = (elements: StructuralElement[] | undefined): string =>
    (elements ?? [])
      .map((element) => {
        if (element.paragraph)
          return (element.paragraph.elements ?? []).map((run) => run.textRun?.content ?? '').join('');
        if (element.table) {
          return (element.table.tableRows ?? [])
            .map((row) => (row.tableCells ?? []).map((cell) => walk(cell.content).trim()).join('\t'))
            .join('\n')
            .concat('\n');
        }
        if (element.tableOfContents) return walk(element.tableOfContents.content);
        return '';
      })
      .join('');
  return walk(document.body?.content);
}

export const documentLink = (id: string) => `https://docs.google.com/document/d/${id}/edit`;
