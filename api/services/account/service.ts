/** Accounts and usage (spec 4.6), read from the account row and the credit ledger. */
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Catalogue } from '../../../common/catalogue.ts';
import { planAllows, type PlanName, type PlansFile } from '../../../common/plans.ts';
import type { CreditLedger } from '../../../activities/credits/credit-ledger.ts';
import type { AccountPlans } from '../../../activities/credits/accounts.ts';
import { ApiError } from '../../errors.ts';
import type { CustomLimits } from '../apikeys/service.ts';
import { messengerChannels, type ConversationStore } from '../../../activities/conversations/conversation-store.ts';
import type { MessengerPlatform } from '../../../common/messengers.ts';

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

  constructor(
    orm: MikroORM,
    ledger: CreditLedger,
    plans: PlansFile,
    catalogue: Catalogue,
    conversations: ConversationStore,
  ) {
    this.orm = orm;
    this.ledger = ledger;
    this.plans = plans;
    this.catalogue = catalogue;
    this.conversations = conversations;
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

  /** Operator changes: a new plan starts a new cycle (with its credits); custom limits replace the old ones. */
  async update(
    userId: string,
    update: { plan?: PlanName; custom_limits?: CustomLimits | null },
    accounts: AccountPlans,
  ) {
    const row = await this.row(userId);
    if (update.custom_limits !== undefined) {
      await this.orm.em
        .fork()
        .execute(
          'update users set custom_limits = ? where id = ?',
          [update.custom_limits === null ? null : JSON.stringify(update.custom_limits), userId],
          'run',
        );
    }
    if (update.plan !== undefined && update.plan !== row.plan) {
      await accounts.startCycle(userId, update.plan, new Date(), 'changed by the operator');
    }
    return this.account(userId);
  }

  private async row(userId: string): Promise<AccountRow> {
    const [row] = await this.orm.em
      .fork()
      .execute<AccountRow[]>('select id, email, plan, custom_limits, created_at from users where id = ?', [userId]);
    if (!row) throw new ApiError('not_found', `No account ${userId}`);
    return row;
  }
}
