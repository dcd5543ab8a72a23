/**
 * Admission of a completion: its rate-limit windows counted and its first attempt's worst case held, in one
 * statement (one round trip, one PostgreSQL wake-up) instead of one per window plus one for the hold. The hold is
 * taken only if every window allows the request; a refused window gives the others their point back, as
 * RateLimits does for any request. A request that needs neither (the operator's) costs no statement at all.
 */
import type { Context } from 'koa';
import { run, type Pool } from '../../db/pool.ts';
import {
  reservationCtes,
  reservationOutcome,
  reservationOutcomeColumns,
  reservationValues,
  type AdmittedWrite,
  type CreditLedger,
  type Reservation,
  type ReservationOutcome,
} from '../../activities/credits/credit-ledger.ts';
import { countingCte, type CountedRow, type RateLimits } from '../rate-limit.ts';
import type { Principal } from '../services/apikeys/service.ts';

/** The admission statement, with a write riding along (`AdmittedWrite`, from parameter 11) or alone. */
function admitStatement(alongside?: AdmittedWrite) {
  return {
    name: alongside ? `admit-completion+${alongside.name}` : 'admit-completion',
    text: `with ${countingCte(1)}, ${reservationCtes(5, '(select ok from allowed)')}${alongside ? `, ${alongside.cte(11)}` : ''}
    select (select coalesce(json_agg(json_build_object('key', key, 'points', points, 'expire', expire)), '[]')
            from counted) as counted,
           ${reservationOutcomeColumns(5)}`,
  };
}
const statements = new Map<string, ReturnType<typeof admitStatement>>();
const statementFor = (alongside?: AdmittedWrite) => {
  const name = alongside?.name ?? '';
  let statement = statements.get(name);
  if (!statement) statements.set(name, (statement = admitStatement(alongside)));
  return statement;
};

export class Admission {
  private readonly pool: Pool;
  private readonly limits: RateLimits | undefined;
  private readonly ledger: CreditLedger;

  constructor(dependencies: { pool: Pool; limits?: RateLimits; ledger: CreditLedger }) {
    this.pool = dependencies.pool;
    this.limits = dependencies.limits;
    this.ledger = dependencies.ledger;
  }

  /**
   * Counts the principal's windows and holds the reservation (either may be absent), sets the X-RateLimit-* headers
   * on the response, and throws 429 when a window refused; otherwise returns the reservation's outcome. `alongside`
   * rides in the same statement when there is one to ride in (windows counted and a hold taken): `wrote` says it was
   * written; otherwise its caller writes it itself.
   */
  async admit(
    context: Context,
    principal: Principal,
    reservation: Reservation | null,
    alongside?: AdmittedWrite,
  ): Promise<(ReservationOutcome & { wrote?: boolean }) | null> {
    const limits = this.limits;
    const subject = limits?.subjectFor(principal) ?? null;
    if (!limits || !subject) return reservation ? this.ledger.reserve(reservation) : null;
    if (!reservation) {
      limits.apply(context, subject, await limits.consume(subject));
      return null;
    }
    const now = Date.now();
    type Row = { counted: CountedRow[]; reserved: boolean; existed: boolean; available: number | null };
    let row: Row | undefined;
    try {
      [row] = await run<Row>(this.pool, statementFor(alongside), [
        ...limits.countingValues(subject, now),
        ...reservationValues(reservation),
        ...(alongside?.values ?? []),
      ]);
    } catch (error) {
      // A concurrent twin (same idempotency key) inserted the hold first: it exists; count this request alone.
      if ((error as { code?: string }).code !== '23505') throw error;
      limits.apply(context, subject, await limits.consume(subject));
      return { ok: true };
    }
    limits.apply(context, subject, await limits.outcome(subject, row!.counted, now));
    return { ...reservationOutcome(row!), ...(alongside && row!.reserved ? { wrote: true } : {}) };
  }
}
