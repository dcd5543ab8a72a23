/**
 * Images with known content for media tests, made with sharp: English text through an SVG `<text>` in DejaVu Sans,
 * Japanese kanji drawn as strokes (the machine has no font with Japanese glyphs), and a subject on a plain
 * background for background removal.
 */
import sharp from 'sharp';

/** An English line of `text` in black on white. */
export function englishImage(text: string): Promise<Buffer> {
  const svg =
    `<svg xmlns="http://www.w3.org/2000/svg" width="${60 + text.length * 24}" height="120">` +
    `<rect width="100%" height="100%" fill="white"/>` +
    `<text x="30" y="75" font-family="DejaVu Sans" font-size="40" fill="black">${text}</text></svg>`;
  return sharp(Buffer.from(svg)).png().toBuffer();
}

/** Kanji in a gothic style from rectangles ([x, y, width, height] in a 100-unit box). */
const stroke = 9;
const kanji: Record<string, number[][]> = {
  十: [
    [6, 42, 88, stroke],
    [46, 6, stroke, 90],
  ],
  三: [
    [16, 14, 68, stroke],
    [22, 46, 56, stroke],
    [8, 80, 84, stroke],
  ],
  日: [
    [20, 8, stroke, 86],
    [71, 8, stroke, 86],
    [20, 8, 60, stroke],
    [20, 46, 60, stroke],
    [20, 85, 60, stroke],
  ],
};

export function japaneseImage(text: string): Promise<Buffer> {
  const size = 60;
  const advance = 72;
  const margin = 40;
  const rects = [...text].flatMap((character, index) =>
    (kanji[character] ?? []).map(([x = 0, y = 0, width = 0, height = 0]) => {
      const left = margin + index * advance + (x * size) / 100;
      return `<rect x="${left}" y="${margin + (y * size) / 100}" width="${(width * size) / 100}" height="${(height * size) / 100}"/>`;
    }),
  );
  const svg =
    `<svg xmlns="http://www.w3.org/2000/svg" width="${margin * 2 + text.length * advance}" height="${size + margin * 2}">` +
    `<rect width="100%" height="100%" fill="white"/><g fill="black">${rects.join('')}</g></svg>`;
  return sharp(Buffer.from(svg)).png().toBuffer();
}

/**
 * A red disc of radius 60 centred on a 200×160 image over a plain light-blue background: background removal must
 * make the corners transparent and keep the centre opaque red.
 */
export function discOnPlainBackground(): Promise<Buffer> {
  const svg =
    '<svg xmlns="http://www.w3.org/2000/svg" width="200" height="160">' +
    '<rect width="100%" height="100%" fill="#9cc8ff"/><circle cx="100" cy="80" r="60" fill="#d01010"/></svg>';
  return sharp(Buffer.from(svg)).png().toBuffer();
}
