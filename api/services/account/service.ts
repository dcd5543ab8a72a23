/** Accounts and usage (spec 4.6), read from the account row and the credit ledger. */
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Catalogue } from '../../../common/catalogue.ts';
import { planAllows, type PlanName, type PlansFile } from '../../../common/plans.ts';
import type { CreditLedger } from '../../../activities/credits/credit-ledger.ts';
import { AccountPlans } from '../../../activities/credits/accounts.ts';
import { ApiError } from '../../errors.ts';
import type { CustomLimits } from '../apikeys/service.ts';
import { messengerChannels, type ConversationStore } from '../../../activities/conversations/conversation-store.ts';
import type { MessengerPlatform } from '../../../common/messengers.ts';
import type { PrincipalCache } from '../../principal-cache.ts';
import { recordAudit, type AuditContext } from '../admin/audit.ts';

interface AccountRow {
  id: string;
  email: string | null;
  plan: PlanName;
  custom_limits: CustomLimits | null;
  created_at: string | Date;
}

export class AccountService {
  private readonly orm: MikroORM;
  private readonly ledger: CreditLedger;
  private readonly plans: PlansFile;
  private readonly catalogue: Catalogue;
  private readonly conversations: ConversationStore;
  /** This replica's cache of keys' principals (absent: every request reads the database). */
  private readonly principals: PrincipalCache | undefined;

  constructor(
    orm: MikroORM,
    ledger: CreditLedger,
    plans: PlansFile,
    catalogue: Catalogue,
    conversations: ConversationStore,
    principals?: PrincipalCache,
  ) {
    this.orm = orm;
    this.ledger = ledger;
    this.plans = plans;
    this.catalogue = catalogue;
    this.conversations = conversations;
    this.principals = principals;
  }

  /** The first account shape: credits, channels and the models the plan allows. */
  async account(userId: string) {
    const row = await this.row(userId);
    const balance = (await this.ledger.balance(userId))!;
    const allowed = this.catalogue.models
      .filter((model) =>
        row.custom_limits?.models
          ? row.custom_limits.models === 'all' || row.custom_limits.models.includes(model.id)
          : planAllows(this.plans, row.plan, model),
      )
      .map((model) => model.id);
    return {
      user_id: row.id,
      plan: row.plan,
      credits_remaining: balance.available,
      credits_used: balance.used,
      credits_held: balance.held,
      channels: await this.channels(row.id),
      allowed_models: allowed,
    };
  }

  /**
   * The channels the account is reached through (spec: Account `channels`, the linked channels): `api` while it has a
   * live key or an API session, `web` once it logged in on the web or chatted there, and each messaging app with a
   * chat linked to one of its conversations (the agent service's `/auth/me` reports the same chats as `linked_apps`).
   */
  private async channels(userId: string): Promise<string[]> {
    const owner = `user:${userId}`;
    const [[row], linked] = await Promise.all([
      this.orm.em.fork().execute<Array<{ api: boolean; web: boolean }>>(
        `select exists (select 1 from api_keys where user_id = ? and revoked_at is null)
                  or exists (select 1 from chat_sessions s join chat_conversations c on c.id = s.conversation_id
                             where c.owner = ? and s.channel = 'api') as api,
                exists (select 1 from web_sessions where user_id = ?)
                  or exists (select 1 from chat_sessions s join chat_conversations c on c.id = s.conversation_id
                             where c.owner = ? and s.channel = 'web') as web`,
        [userId, owner, userId, owner],
      ),
      this.conversations.linkedChats(owner),
    ]);
    const platforms = new Set(linked.map((chat) => chat.platform));
    return [
      ...(row?.api ? ['api'] : []),
      ...(row?.web ? ['web'] : []),
      ...messengerChannels.filter((platform) => platforms.has(platform as MessengerPlatform)),
    ];
  }

  /** The second account shape (`/auth/me`). */
  async me(userId: string) {
    const row = await this.row(userId);
    const balance = (await this.ledger.balance(userId))!;
    return {
      user_id: row.id,
      email: row.email,
      plan: row.plan,
      credits_remaining: balance.available,
      created_at: new Date(row.created_at).toISOString(),
    };
  }

  /** Credits used and remaining; within `[from, to)` when given, and per model on request. */
  async usage(userId: string, range: { from?: string; to?: string; groupByModel: boolean }) {
    await this.row(userId);
    const balance = (await this.ledger.balance(userId))!;
    const rows = await this.orm.em.fork().execute<
      Array<{
        model: string | null;
        requests: string;
        credits: string;
        prompt: string;
        completion: string;
        estimated: string;
      }>
    >(
      `select model, count(*) as requests, coalesce(sum(amount), 0) as credits,
              coalesce(sum(prompt_tokens), 0) as prompt, coalesce(sum(completion_tokens), 0) as completion,
              count(*) filter (where estimated) as estimated
       from credit_ledger
       where user_id = ? and kind = 'settle' and created_at >= ? and created_at < ?
       group by model order by model`,
      [userId, range.from ?? '-infinity', range.to ?? 'infinity'],
    );
    const used = rows.reduce((total, row) => total + Number(row.credits), 0);
    return {
      credits_used: range.from || range.to ? used : balance.used,
      credits_remaining: balance.available,
      ...(range.from || range.to ? { from: range.from ?? null, to: range.to ?? null } : {}),
      ...(range.groupByModel
        ? {
            by_model: rows.map((row) => ({
              model: row.model,
              requests: Number(row.requests),
              credits: Number(row.credits),
              prompt_tokens: Number(row.prompt),
              completion_tokens: Number(row.completion),
              estimated_requests: Number(row.estimated),
            })),
          }
        : {}),
    };
  }

  /**
   * An operator's change of an account, the one implementation behind both doors (the gateway's
   * `PATCH /api/v1/account/{id}` and the console's `PATCH /admin/api/users/{id}/account`): a new plan starts a new
   * cycle with its monthly credits; custom limits replace the old ones whole (null clears them). One transaction with
   * its audit row (`account.update`: the plan and limits before and after), the account's row locked first, so two
   * changes at once are applied and recorded one after the other. Every replica's cache of the account's keys hears of
   * it from the database (principal-triggers.ts); this one forgets them before answering, so the account's next
   * request, on any door, meets the new plan and limits.
   */
  async update(userId: string, update: { plan?: PlanName; custom_limits?: CustomLimits | null }, by: AuditContext) {
    this.checkModels(update.custom_limits?.models);
    await this.orm.em.fork().transactional(async (em) => {
      const [before] = await em.execute<Array<{ plan: PlanName; custom_limits: CustomLimits | null }>>(
        'select plan, custom_limits from users where id = ? for update',
        [userId],
      );
      if (!before) throw new ApiError('not_found', `No account ${userId}`);
      const after = {
        plan: update.plan ?? before.plan,
        custom_limits: update.custom_limits === undefined ? before.custom_limits : update.custom_limits,
      };
      if (update.custom_limits !== undefined) {
        await em.execute(
          'update users set custom_limits = ? where id = ?',
          [after.custom_limits === null ? null : JSON.stringify(after.custom_limits), userId],
          'run',
        );
      }
      let cycle: { credits_granted: number } | null = null;
      if (after.plan !== before.plan) {
        const granted = await AccountPlans.within(em, this.plans).startCycle(
          userId,
          after.plan,
          new Date(),
          'changed by the operator',
        );
        cycle = { credits_granted: granted ? this.plans.plans[after.plan].monthly_credits : 0 };
      }
      await recordAudit(em, 'account.update', by, userId, { before, after, ...(cycle ? { new_cycle: cycle } : {}) });
    });
    this.principals?.forget(userId);
    return this.account(userId);
  }

  /** A custom list of models names models of the catalogue: a misspelt id would lock the account out silently. */
  private checkModels(models: CustomLimits['models'] | undefined): void {
    if (models === undefined || models === 'all') return;
    const known = new Set([
      ...this.catalogue.models.map((model) => model.id),
      ...this.catalogue.embeddingModels.map((model) => model.id),
      ...(this.catalogue.selfHosted ? [this.catalogue.selfHosted.id] : []),
    ]);
    const unknown = models.filter((model) => !known.has(model));
    if (unknown.length > 0) {
      throw new ApiError('invalid_request', `No such model in the catalogue: ${unknown.join(', ')}`, {
        param: 'custom_limits.models',
      });
    }
  }

  private async row(userId: string): Promise<AccountRow> {
    const [row] = await this.orm.em
      .fork()
      .execute<AccountRow[]>('select id, email, plan, custom_limits, created_at from users where id = ?', [userId]);
    if (!row) throw new ApiError('not_found', `No account ${userId}`);
    return row;
  }
}
