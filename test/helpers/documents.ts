/**
 * Documents with known content for the files, RAG and SQL tests, made in the test: PDFs with a text layer (pdfkit),
 * Excel workbooks (exceljs), CSV text. Images with text come from ./media-images.ts.
 */
import ExcelJS from 'exceljs';
import PDFDocument from 'pdfkit';

/** A PDF with one page per entry of `pages`, each page's text as given (a text layer, as a word processor makes). */
export function pdfWith(pages: string[]): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const document = new PDFDocument({ autoFirstPage: false, info: { Title: 'Test document' } });
    const chunks: Buffer[] = [];
    document.on('data', (chunk: Buffer) => chunks.push(chunk));
    document.on('end', () => resolve(Buffer.concat(chunks)));
    document.on('error', reject);
    for (const text of pages) {
      document.addPage({ size: 'A4', margin: 50 });
      document.fontSize(12).text(text, { width: 495 });
    }
    document.end();
  });
}

/** An xlsx workbook with one sheet of `rows` (the first row is the header). */
export async function xlsxWith(rows: unknown[][], sheetName = 'Sheet1'): Promise<Buffer> {
  const workbook = new ExcelJS.Workbook();
  const sheet = workbook.addWorksheet(sheetName);
  for (const row of rows) sheet.addRow(row);
  return Buffer.from(await workbook.xlsx.writeBuffer());
}

/** CSV text of `rows` (fields quoted where they need it). */
export function csvOf(rows: unknown[][]): string {
  const field = (value: unknown) => {
    const text = value === null || value === undefined ? '' : String(value);
    return /[",\n\r]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
  };
  return rows.map((row) => row.map(field).join(',')).join('\n') + '\n';
}
