/**
 * A PDF's text layer, page by page, read by Mozilla's pdf.js (`pdfjs-dist`, the reference implementation) in a
 * worker thread of its own (activities/rag/extract.ts starts it with a heap limit and a deadline per call), so a
 * malformed or hostile PDF can stall or exhaust only this thread. pdf.js 6 no longer compiles fonts with `eval` (the
 * way in of CVE-2024-4367); fonts are never loaded as faces, and nothing is fetched (the bytes are given).
 *
 * Requests: `{bytes, from?, to?}` answers `{pages, texts: [{page, text}]}` for pages `from`..`to` (1-based,
 * inclusive; none: only the page count). A page's items are joined as pdf.js lays them out: an end of line after an
 * item that ends one, a space between items of a line that do not touch.
 */
import { getDocument } from 'pdfjs-dist/legacy/build/pdf.mjs';
import { serveCalls } from '../threads/deadline-worker.ts';

export interface PdfTextRequest {
  bytes: Uint8Array;
  from?: number;
  to?: number;
}

export interface PdfTextResponse {
  pages: number;
  texts: Array<{ page: number; text: string }>;
}

interface TextItem {
  str: string;
  hasEOL: boolean;
}

serveCalls<PdfTextRequest, PdfTextResponse>(async ({ bytes, from, to }) => {
  const loading = getDocument({
    data: bytes,
    disableFontFace: true,
    useSystemFonts: false,
    stopAtErrors: false,
    verbosity: 0,
  });
  try {
    const document = await loading.promise;
    const texts: PdfTextResponse['texts'] = [];
    if (from !== undefined) {
      const last = Math.min(to ?? document.numPages, document.numPages);
      for (let page = Math.max(1, from); page <= last; page++) {
        const content = await (await document.getPage(page)).getTextContent();
        let text = '';
        for (const item of content.items as TextItem[]) {
          if (typeof item.str !== 'string') continue;
          if (
            text !== '' &&
            !text.endsWith('\n') &&
            !text.endsWith(' ') &&
            item.str !== '' &&
            !item.str.startsWith(' ')
          )
            text += ' ';
          text += item.str;
          if (item.hasEOL) text += '\n';
        }
        texts.push({ page, text: text.trim() });
      }
    }
    return { pages: document.numPages, texts };
  } finally {
    await loading.destroy();
  }
});
