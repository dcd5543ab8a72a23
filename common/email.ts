/**
 * E-mail addresses, normalised in one place. Every path that creates or finds an account by address (the gateway's
 * `POST /api/v1/apikeys`, `npm run admin -- create-key`, magic links, Google logins, team invitations) goes through
 * `normalizeEmail`, and the database refuses an address that is not in this form (`users_email_normalised`, see
 * db/entities/user.entity.ts), so `Alice@Example.com` and `alice@example.com` are one account. Workflow-safe.
 */

/**
 * An address as it is stored and compared: trimmed and lower-cased. The local part is case-sensitive in theory
 * (RFC 5321), but no mail provider treats it so, and people type their address with any capitals.
 */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}
