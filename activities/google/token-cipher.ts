/**
 * Encryption at rest for OAuth tokens (the Google refresh token and its current access token, in
 * `oauth_identities`): AES-256-GCM under a key derived from TOKEN_ENCRYPTION_KEY with HKDF-SHA256 (a fixed salt and
 * a purpose label, so the same secret could key other purposes independently; the label predates access tokens being
 * stored too, and stays, so tokens stored before still decrypt). Here in activities/ because the workspace tools,
 * which run in activities (worker or API process), decrypt and refresh tokens; the login encrypts with it too.
 * A fresh 12-byte IV per value; the stored form is `v1.<iv>.<tag>.<ciphertext>` in base64url. A value that fails
 * authentication (tampered, or another key) decrypts to an error, never to garbage.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

export class TokenCipher {
  private readonly key: Buffer;

  constructor(secret: string) {
    if (secret.length < 32) throw new Error('TOKEN_ENCRYPTION_KEY must have at least 32 characters');
    this.key = Buffer.from(hkdfSync('sha256', secret, 'tessera-token-cipher', 'oauth-refresh-token v1', 32));
  }

  encrypt(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const ciphertext = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    const parts = [iv, cipher.getAuthTag(), ciphertext].map((part) => part.toString('base64url'));
    return `v1.${parts.join('.')}`;
  }

  decrypt(stored: string): string {
    const [version, iv, tag, ciphertext] = stored.split('.');
    if (version !== 'v1' || !iv || !tag || ciphertext === undefined) throw new Error('not an encrypted token');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
  }
}
