/**
 * `POST /vision/analyze` `{image, prompt?, model?, max_tokens?}` (spec 4.13): a vision model's description of an
 * image, or its answer about it. The image is read here (a URL through the platform's URL guard, or base64), checked
 * to be an image by its bytes, and sent to the model inline, so no provider ever fetches a URL a caller chose. The
 * call is an ordinary completion through the gateway's CompletionService (the `chatCompletion` workflow): planned for
 * the caller's plan, admitted by the same rate limits and credit hold, failed over, settled in the ledger. Only
 * models with the `vision` capability are ever used: a named model without it is refused before anything happens
 * (400, `model`), and `auto` and failover pick among vision models only (activities/routing/router.ts).
 */
import Router from '@koa/router';
import type { Catalogue } from '../../../../common/catalogue.ts';
import { resolveModel } from '../../../../common/catalogue.ts';
import { completionWorkflowId } from '../../../../common/completion.ts';
import { run, type Pool } from '../../../../db/pool.ts';
import { requireCaller, type CallerState } from '../../../auth.ts';
import { ApiError, invalidRequest, visionRefusal } from '../../../errors.ts';
import type { Admission } from '../../../gateway/admission.ts';
import { readImage } from '../../../gateway/routes/media/inputs.ts';
import type { CompletionService } from '../../../gateway/routes/completions/service.ts';
import { visionBodySchema, type VisionResponse } from './schema.ts';

export interface VisionDependencies {
  completions: CompletionService;
  admission: Admission;
  catalogue: Catalogue;
  pool: Pool;
  /** AGENT_VISION_MODEL */
  defaultModel: string;
  /** Hosts exempt from the URL guard's address rules (FETCH_ALLOWED_HOSTS). */
  allowedHosts: string[];
}

const settled = {
  name: 'vision-settled-credits',
  text: `select coalesce(sum(amount), 0)::int as credits from credit_ledger where workflow_id = $1 and kind = 'settle'`,
};

export function visionRoutes(dependencies: VisionDependencies) {
  const router = new Router<CallerState>();

  router.post('/vision/analyze', async (context) => {
    const principal = requireCaller(context.state);
    const parsed = visionBodySchema.safeParse(context.request.body ?? {});
    if (!parsed.success) throw invalidRequest(parsed.error);
    const { image, prompt, max_tokens: maxTokens } = parsed.data;
    const model = parsed.data.model ?? dependencies.defaultModel;
    if (model !== 'auto') {
      const resolved = resolveModel(dependencies.catalogue, model);
      if (!resolved) {
        throw new ApiError('model_not_found', `The model '${model}' does not exist; see GET /v1/models`, {
          param: 'model',
        });
      }
      if (!resolved.model.capabilities.includes('vision')) {
        throw new ApiError('invalid_request', visionRefusal(resolved.model.id).message, { param: 'model' });
      }
    }
    const source = /^https?:\/\//i.test(image) ? { url: image } : { base64: image };
    const read = await readImage(source, 'image', { allowedHosts: dependencies.allowedHosts });
    const dataUri = `data:${read.mime};base64,${Buffer.from(read.bytes).toString('base64')}`;
    const started = await dependencies.completions.start(
      principal,
      {
        model,
        max_tokens: maxTokens,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: prompt },
              { type: 'image_url', image_url: { url: dataUri } },
            ],
          },
        ],
      },
      { admit: (reservation) => dependencies.admission.admit(context, principal, reservation) },
    );
    const answer = await dependencies.completions.answer(started);
    // The workflow settles the attempt's credits before it ends: waited for, so the price answered is the one charged.
    await started.result();
    const [charged] = await run<{ credits: number }>(dependencies.pool, settled, [
      completionWorkflowId(started.requestId),
    ]);
    const content = answer.message?.content;
    context.body = {
      answer: typeof content === 'string' ? content : '',
      model: answer.model,
      usage: { input_tokens: answer.usage.prompt_tokens, output_tokens: answer.usage.completion_tokens },
      credits_used: charged?.credits ?? 0,
    } satisfies VisionResponse;
  });

  return router;
}
