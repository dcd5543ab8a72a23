/**
 * Request bodies of the agent service's chat (api/agents/routes/chat/routes.ts), strict: `POST /chat/stream/{id}`,
 * `POST /chat/loop/{id}`, `POST /api/v1/chat` and the approval decisions.
 */
import { z } from 'zod';
import { chatTurnIdPattern } from '../../../../common/chat-turn.ts';
import { fileIdPattern } from '../uploads/schema.ts';

export const sessionKey = z.string().regex(/^[A-Za-z0-9:_.@-]{1,128}$/, 'must be 1-128 letters, digits or : _ . @ -');

/**
 * An image as base64 (or a data: URL) of a PNG, JPEG, GIF or WebP. At most 1 MB of base64 (about 750 KB of image):
 * the image travels in the turn's workflow input, and Temporal refuses payloads over 2 MB.
 */
export const maxImageBase64Chars = 1_000_000;

const imageData = z
  .string()
  .max(maxImageBase64Chars + 40, `must be at most ${maxImageBase64Chars} characters of base64 (about 750 KB)`)
  .transform((value, context) => {
    if (value === '') return undefined;
    const url = toImageDataUrl(value);
    if (!url) {
      context.addIssue({ code: 'custom', message: 'must be a base64 PNG, JPEG, GIF or WebP image' });
      return z.NEVER;
    }
    return url;
  });

/**
 * The most uploaded images one message carries (`image_file_ids`): each travels in the turn's workflow input, so they
 * share one image's room there (api/agents/routes/chat/routes.ts, `attachedImages`), and vision models read a few
 * images per message well. The web composer takes as many images (web/src/chat/composer.tsx).
 */
export const maxAttachedImages = 4;

const fileId = z.string().regex(fileIdPattern, 'must be a file id (file_…)');

const messageFields = {
  message: z.string().trim().min(1).max(32_000),
  session_id: sessionKey.optional(),
  image_data: imageData.optional(),
  /**
   * An uploaded image of the caller's (`POST /upload`), for the turn's vision model. The turn stores its id (an
   * `image_data` image is not stored): a turn standing in for it attaches it again, and `GET /history` names it.
   */
  image_file_id: fileId.optional(),
  /**
   * Uploaded images of the caller's (1 to `maxAttachedImages` distinct ids), in the order the message shows them, each
   * checked as `image_file_id` is; the turn stores them all. Not with `image_file_id` (one way to attach per message).
   */
  image_file_ids: z
    .array(fileId)
    .min(1, 'must name at least one file (or leave image_file_ids out)')
    .max(maxAttachedImages, `must name at most ${maxAttachedImages} images`)
    .refine((ids) => new Set(ids).size === ids.length, 'must not name a file twice')
    .optional(),
  preferred_agents: z.array(z.string().min(1).max(64)).max(32).optional(),
  preset_instruction: z.string().max(4_000).optional(),
  /**
   * A turn of the session this message stands in for: the new turn follows the same place of the conversation as
   * that one (a regenerated answer, an edited message, the same message asked of another agent), which stays
   * reachable as an alternative; the conversation moves to the new branch. Without an image of its own (none of
   * `image_file_id`, `image_file_ids`, `image_data`) the message attaches all that turn's uploaded images again (404
   * when one of them was deleted).
   */
  replaces_turn: z.string().regex(chatTurnIdPattern, 'must be a turn id of the session (chat-…)').optional(),
};

/** `image_file_id` and `image_file_ids` are two ways to attach uploads: a message uses one (400 for both). */
const oneWayToAttach = (
  body: { image_file_id?: string | undefined; image_file_ids?: string[] | undefined },
  context: z.RefinementCtx,
) => {
  if (body.image_file_id !== undefined && body.image_file_ids !== undefined) {
    context.addIssue({
      code: 'custom',
      path: ['image_file_ids'],
      message: 'send either image_file_id or image_file_ids, not both',
    });
  }
};

export const streamBody = z.object(messageFields).strict().superRefine(oneWayToAttach);
export const loopBody = z
  .object({
    ...messageFields,
    agent_id: z.string().min(1).max(64).optional(),
    max_iterations: z.number().int().min(1).max(200).optional(),
    budget_credits: z.number().int().min(1).optional(),
  })
  .strict()
  .superRefine(oneWayToAttach);
export const externalBody = z
  .object({ message: messageFields.message, session_id: sessionKey, agent_id: z.string().min(1).max(64).optional() })
  .strict();
export const decisionBody = z.object({ reason: z.string().max(500).optional() }).strict();

const signatures: Array<{ mime: string; test: (bytes: Buffer) => boolean }> = [
  {
    mime: 'image/png',
    test: (b) => b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])),
  },
  { mime: 'image/jpeg', test: (b) => b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff },
  { mime: 'image/gif', test: (b) => b.subarray(0, 4).toString('latin1') === 'GIF8' },
  {
    mime: 'image/webp',
    test: (b) => b.subarray(0, 4).toString('latin1') === 'RIFF' && b.subarray(8, 12).toString('latin1') === 'WEBP',
  },
];

/** A data: URL for base64 image data (bare, or already a data: URL), its type read from its first bytes. */
function toImageDataUrl(value: string): string | null {
  const match = /^(?:data:image\/[a-z+.-]+;base64,)?([A-Za-z0-9+/]+={0,2})$/.exec(value.replace(/\s+/g, ''));
  if (!match) return null;
  const head = Buffer.from(match[1]!.slice(0, 24), 'base64');
  const kind = signatures.find((signature) => signature.test(head));
  return kind ? `data:${kind.mime};base64,${match[1]}` : null;
}
