/**
 * The agent directory (spec 4.2): the built-in agents of the catalogue (config/agents.yaml) and each user's custom
 * agents (`custom_agents`), resolved for one caller. Plain SQL on the `pg` pool: a chat turn resolves its agent on
 * every message.
 *
 * Rules:
 * - A built-in agent is never edited: PATCH on one forks it into a custom agent of the caller's (`forked_from` names
 *   it) with the changes applied. A fork inherits the built-in's workspace (the Google login it needs).
 * - Changing a built-in agent's model records the caller's choice (`agent_model_choices`) without forking: the agent
 *   keeps following the catalogue's prompt and tools. Changing a custom agent's model updates the agent.
 * - A model is chosen from the model catalogue, and only one the caller's plan (or operator-set model list) allows:
 *   the same rule as the completions router (`accountAllows`).
 * - The model an agent answers with for a caller (`model`) is its configured one (the caller's choice, or the
 *   definition's) when the caller may use it; otherwise (a built-in on a model above the caller's plan, a plan that
 *   changed since the choice) AGENT_DEFAULT_MODEL, else the first catalogue model the caller may use. So every listed
 *   agent is one the caller can talk to. `configured_model` shows the configured one.
 * - Another user's custom agent does not exist for the caller (null here, 404 over HTTP).
 */
import type { AgentDefinition, ResolvedAgent } from '../../../common/agents.ts';
import { resolveModel, type CatalogueModel } from '../../../common/catalogue.ts';
import { cheapestPlanFor, type PlansFile } from '../../../common/plans.ts';
import type { LoadedCatalogue } from '../../../config/load-catalogue.ts';
import { accountAllows, type RoutingAccount } from '../../../activities/routing/router.ts';
import { run, type Pool } from '../../../db/pool.ts';
import { ApiError } from '../../errors.ts';
import { newId, type Principal } from '../apikeys/service.ts';

/** Custom agents one user may have. */
export const MAX_CUSTOM_AGENTS = 100;

export interface CustomAgentInput {
  name: string;
  description: string;
  system_prompt: string;
  model?: string;
  tools?: string[];
  routing?: { keywords?: string[]; examples?: string[] };
  temperature?: number | null;
}

export type CustomAgentPatch = Partial<CustomAgentInput>;

export interface AgentDirectoryDependencies {
  pool: Pool;
  catalogue: LoadedCatalogue;
  plans: PlansFile;
  builtIns: AgentDefinition[];
  /** A new custom agent's model when none is given, and the fallback for callers who may not use an agent's model. */
  defaultModel: string;
}

interface CustomAgentRow {
  id: string;
  user_id: string;
  forked_from: string | null;
  name: string;
  description: string;
  system_prompt: string;
  model: string;
  tools: string[];
  routing: { keywords: string[]; examples: string[] };
  temperature: number | null;
}

const agentColumns = 'id, user_id, forked_from, name, description, system_prompt, model, tools, routing, temperature';

const statements = {
  listCustom: {
    name: 'agents-list-custom',
    text: `select ${agentColumns} from custom_agents where user_id = $1 order by created_at, id`,
  },
  getCustom: {
    name: 'agents-get-custom',
    text: `select ${agentColumns} from custom_agents where id = $1 and user_id = $2`,
  },
  countCustom: {
    name: 'agents-count-custom',
    text: 'select count(*)::int as count from custom_agents where user_id = $1',
  },
  insertCustom: {
    name: 'agents-insert-custom',
    text: `insert into custom_agents (id, user_id, forked_from, name, description, system_prompt, model, tools, routing,
                                      temperature, created_at, updated_at)
           values ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9::jsonb, $10, now(), now())
           returning ${agentColumns}`,
  },
  updateCustom: {
    name: 'agents-update-custom',
    text: `update custom_agents set name = $3, description = $4, system_prompt = $5, model = $6, tools = $7::jsonb,
                                    routing = $8::jsonb, temperature = $9, updated_at = now()
           where id = $1 and user_id = $2
           returning ${agentColumns}`,
  },
  deleteCustom: { name: 'agents-delete-custom', text: 'delete from custom_agents where id = $1 and user_id = $2' },
  choices: {
    name: 'agents-model-choices',
    text: 'select agent_id, model from agent_model_choices where user_id = $1',
  },
  choice: {
    name: 'agents-model-choice',
    text: 'select model from agent_model_choices where user_id = $1 and agent_id = $2',
  },
  choose: {
    name: 'agents-choose-model',
    text: `insert into agent_model_choices (user_id, agent_id, model) values ($1, $2, $3)
           on conflict (user_id, agent_id) do update set model = excluded.model`,
  },
} as const;

/** Who the caller is for model rules: null (the operator, or an anonymous listing) may use every model. */
function accountOf(principal: Principal | null): RoutingAccount | null {
  if (!principal || principal.operator) return null;
  return { plan: principal.plan, customModels: principal.customLimits?.models };
}

export class AgentDirectory {
  private readonly dependencies: AgentDirectoryDependencies;
  private readonly builtIns: Map<string, AgentDefinition>;

  constructor(dependencies: AgentDirectoryDependencies) {
    this.dependencies = dependencies;
    this.builtIns = new Map(dependencies.builtIns.map((agent) => [agent.id, agent]));
  }

  /** Whether an id names a built-in agent. */
  isBuiltIn(agentId: string): boolean {
    return this.builtIns.has(agentId);
  }

  /** The built-in agents, then the caller's custom agents (oldest first). Anonymous: the built-ins as configured. */
  async list(principal: Principal | null): Promise<ResolvedAgent[]> {
    const { pool } = this.dependencies;
    const choices = principal
      ? new Map(
          (await run<{ agent_id: string; model: string }>(pool, statements.choices, [principal.userId])).map((row) => [
            row.agent_id,
            row.model,
          ]),
        )
      : new Map<string, string>();
    const builtIns = [...this.builtIns.values()].map((agent) =>
      this.resolveBuiltIn(principal, agent, choices.get(agent.id)),
    );
    return principal ? [...builtIns, ...(await this.listCustom(principal))] : builtIns;
  }

  /** The caller's custom agents. */
  async listCustom(principal: Principal): Promise<ResolvedAgent[]> {
    const rows = await run<CustomAgentRow>(this.dependencies.pool, statements.listCustom, [principal.userId]);
    return rows.map((row) => this.resolveCustom(principal, row));
  }

  /** One agent as the caller sees it; null when there is no such agent, or it is another user's. */
  async get(principal: Principal | null, agentId: string): Promise<ResolvedAgent | null> {
    const builtIn = this.builtIns.get(agentId);
    if (builtIn) {
      const [choice] = principal
        ? await run<{ model: string }>(this.dependencies.pool, statements.choice, [principal.userId, agentId])
        : [];
      return this.resolveBuiltIn(principal, builtIn, choice?.model);
    }
    if (!principal) return null;
    const row = await this.customRow(principal, agentId);
    return row ? this.resolveCustom(principal, row) : null;
  }

  /** Creates a custom agent. Throws model_not_found / permission_denied for a model the caller may not use. */
  async create(principal: Principal, input: CustomAgentInput): Promise<ResolvedAgent> {
    const model = input.model ?? this.usableDefaultModel(principal);
    this.checkModel(principal, model);
    return this.insert(principal, null, {
      name: input.name,
      description: input.description,
      system_prompt: input.system_prompt,
      model,
      tools: [...new Set(input.tools ?? [])],
      routing: { keywords: input.routing?.keywords ?? [], examples: input.routing?.examples ?? [] },
      temperature: input.temperature ?? null,
    });
  }

  /**
   * Edits the caller's custom agent, or forks a built-in one with the changes applied (`forked` true). Null when the
   * agent does not exist for the caller.
   */
  async update(
    principal: Principal,
    agentId: string,
    patch: CustomAgentPatch,
  ): Promise<{ agent: ResolvedAgent; forked: boolean } | null> {
    if (patch.model !== undefined) this.checkModel(principal, patch.model);
    const builtIn = this.builtIns.get(agentId);
    if (builtIn) {
      const agent = await this.fork(principal, agentId, patch);
      return agent ? { agent, forked: true } : null;
    }
    const row = await this.customRow(principal, agentId);
    if (!row) return null;
    const [updated] = await run<CustomAgentRow>(this.dependencies.pool, statements.updateCustom, [
      row.id,
      principal.userId,
      patch.name ?? row.name,
      patch.description ?? row.description,
      patch.system_prompt ?? row.system_prompt,
      patch.model ?? row.model,
      JSON.stringify(patch.tools ? [...new Set(patch.tools)] : row.tools),
      JSON.stringify({
        keywords: patch.routing?.keywords ?? row.routing.keywords,
        examples: patch.routing?.examples ?? row.routing.examples,
      }),
      patch.temperature !== undefined ? patch.temperature : row.temperature,
    ]);
    // Deleted in between: gone for the caller.
    return updated ? { agent: this.resolveCustom(principal, updated), forked: false } : null;
  }

  /**
   * Copies an agent the caller can see (a built-in one, or one of their own) into a new custom agent, with
   * `changes` applied. The copy's `forked_from` is the built-in agent it descends from. Null when there is no such agent.
   */
  async fork(principal: Principal, agentId: string, changes: CustomAgentPatch = {}): Promise<ResolvedAgent | null> {
    const source = await this.get(principal, agentId);
    if (!source) return null;
    const model = changes.model ?? source.configuredModel;
    if (changes.model !== undefined) this.checkModel(principal, changes.model);
    return this.insert(principal, source.builtin ? source.id : source.forkedFrom, {
      name: changes.name ?? (source.builtin ? `${source.name} (custom)` : `${source.name} (copy)`).slice(0, 80),
      description: changes.description ?? source.description,
      system_prompt: changes.system_prompt ?? source.systemPrompt,
      // A built-in's model may be above the caller's plan: the fork keeps it only if the caller may use it.
      model: this.allowed(principal, model) ? model : source.model,
      tools: changes.tools ? [...new Set(changes.tools)] : source.tools,
      routing: {
        keywords: changes.routing?.keywords ?? source.routing.keywords,
        examples: changes.routing?.examples ?? source.routing.examples,
      },
      temperature: changes.temperature !== undefined ? changes.temperature : source.temperature,
    });
  }

  /**
   * Sets the model an agent answers the caller with: for a built-in agent the caller's recorded choice, for their
   * custom agent the agent's own model. Null when the agent does not exist for the caller.
   */
  async setModel(principal: Principal, agentId: string, model: string): Promise<ResolvedAgent | null> {
    const { pool } = this.dependencies;
    const builtIn = this.builtIns.get(agentId);
    if (!builtIn && !(await this.customRow(principal, agentId))) return null;
    this.checkModel(principal, model);
    if (builtIn) {
      await run(pool, statements.choose, [principal.userId, agentId, model]);
      return this.get(principal, agentId);
    }
    return (await this.update(principal, agentId, { model }))?.agent ?? null;
  }

  /** Deletes the caller's custom agent; false when they have none with this id. */
  async delete(principal: Principal, agentId: string): Promise<boolean> {
    const result = await this.dependencies.pool.query({
      name: statements.deleteCustom.name,
      text: statements.deleteCustom.text,
      values: [agentId, principal.userId],
    });
    return (result.rowCount ?? 0) > 0;
  }

  /** 404 model_not_found for a model outside the catalogue, 403 permission_denied (with `required_plan`) above the plan. */
  checkModel(principal: Principal, modelId: string): CatalogueModel {
    const resolved = resolveModel(this.dependencies.catalogue.catalogue, modelId);
    if (!resolved) {
      throw new ApiError('model_not_found', `The model '${modelId}' does not exist; see GET /v1/models`, {
        param: 'model',
      });
    }
    if (!accountAllows(this.dependencies.plans, accountOf(principal), resolved.model)) {
      const requiredPlan = cheapestPlanFor(this.dependencies.plans, resolved.model);
      const unlock = requiredPlan ? `; it needs the ${requiredPlan} plan or higher` : '';
      throw new ApiError('permission_denied', `The model '${modelId}' is not in your ${principal.plan} plan${unlock}`, {
        param: 'model',
        requiredPlan: requiredPlan ?? undefined,
      });
    }
    return resolved.model;
  }

  private async insert(
    principal: Principal,
    forkedFrom: string | null,
    agent: Omit<CustomAgentRow, 'id' | 'user_id' | 'forked_from'>,
  ): Promise<ResolvedAgent> {
    const { pool } = this.dependencies;
    const [{ count }] = (await run<{ count: number }>(pool, statements.countCustom, [principal.userId])) as [
      { count: number },
    ];
    if (count >= MAX_CUSTOM_AGENTS) {
      throw new ApiError(
        'invalid_request',
        `You have ${MAX_CUSTOM_AGENTS} custom agents, the most an account may have; delete one first`,
      );
    }
    const [row] = await run<CustomAgentRow>(pool, statements.insertCustom, [
      newId('agt'),
      principal.userId,
      forkedFrom,
      agent.name,
      agent.description,
      agent.system_prompt,
      agent.model,
      JSON.stringify(agent.tools),
      JSON.stringify(agent.routing),
      agent.temperature,
    ]);
    return this.resolveCustom(principal, row!);
  }

  private async customRow(principal: Principal, agentId: string): Promise<CustomAgentRow | null> {
    if (!agentId.startsWith('agt_')) return null;
    const [row] = await run<CustomAgentRow>(this.dependencies.pool, statements.getCustom, [agentId, principal.userId]);
    return row ?? null;
  }

  private resolveBuiltIn(principal: Principal | null, agent: AgentDefinition, choice?: string): ResolvedAgent {
    const configured = choice ?? agent.model;
    return {
      ...agent,
      model: this.effectiveModel(principal, configured),
      configuredModel: configured,
      builtin: true,
      forkedFrom: null,
    };
  }

  private resolveCustom(principal: Principal, row: CustomAgentRow): ResolvedAgent {
    const origin = row.forked_from ? this.builtIns.get(row.forked_from) : undefined;
    return {
      id: row.id,
      name: row.name,
      description: row.description,
      systemPrompt: row.system_prompt,
      model: this.effectiveModel(principal, row.model),
      configuredModel: row.model,
      tools: row.tools,
      routing: { keywords: row.routing.keywords ?? [], examples: row.routing.examples ?? [] },
      workspace: origin?.workspace ?? null,
      temperature: row.temperature,
      builtin: false,
      forkedFrom: row.forked_from,
    };
  }

  private allowed(principal: Principal | null, modelId: string): boolean {
    const resolved = resolveModel(this.dependencies.catalogue.catalogue, modelId);
    return !!resolved && accountAllows(this.dependencies.plans, accountOf(principal), resolved.model);
  }

  /** The configured model when the caller may use it, else the default model, else the first one they may use. */
  private effectiveModel(principal: Principal | null, configured: string): string {
    if (this.allowed(principal, configured)) return configured;
    return this.usableDefaultModel(principal);
  }

  private usableDefaultModel(principal: Principal | null): string {
    const { catalogue } = this.dependencies.catalogue;
    if (this.allowed(principal, this.dependencies.defaultModel)) return this.dependencies.defaultModel;
    const usable = catalogue.models.find((model) => this.allowed(principal, model.id)) ?? catalogue.selfHosted;
    return usable?.id ?? this.dependencies.defaultModel;
  }
}

/** An agent as the HTTP API shows it in listings. */
export function agentSummary(agent: ResolvedAgent) {
  return {
    id: agent.id,
    name: agent.name,
    description: agent.description,
    model: agent.model,
    configured_model: agent.configuredModel,
    tools: agent.tools,
    builtin: agent.builtin,
    workspace: agent.workspace,
    forked_from: agent.forkedFrom,
  };
}

/** An agent with its prompt and settings (one agent's responses). */
export function agentDetail(agent: ResolvedAgent) {
  return {
    ...agentSummary(agent),
    system_prompt: agent.systemPrompt,
    routing: agent.routing,
    temperature: agent.temperature,
  };
}
