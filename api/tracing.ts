/**
 * The API's side of the traces (process/tracing.ts): a SERVER span per request, parent of everything the request
 * does (the workflow start, and through its header the workflow, its activities and model calls), and the caller
 * once authentication knows them. Installed only when tracing is on; off, `withCaller` finds no span and goes on.
 */
import {
  context as otelContext,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Span,
} from '@opentelemetry/api';
import type Koa from 'koa';
import type { Middleware } from 'koa';
import { accountBaggage, keyIdBaggage } from '../activities/model-call-spans.ts';
import type { Tracing } from '../process/tracing.ts';

interface TracedState {
  principal?: { userId: string; keyId: string | null; operator?: boolean };
}

/**
 * One SERVER span per request, named `METHOD /matched/route` (HTTP semantic conventions), joining the caller's trace
 * when the request carries a W3C `traceparent`. It ends when the response has been sent (a stream's last byte too).
 */
export function requestTracing(tracing: Pick<Tracing, 'tracer'>): Middleware<TracedState> {
  const { tracer } = tracing;
  return async (context, next) => {
    // The caller's trace context, never its baggage: the platform's own baggage (withCaller) is what spans believe.
    const parent = propagation.deleteBaggage(propagation.extract(ROOT_CONTEXT, context.headers));
    const span = tracer.startSpan(
      context.method,
      {
        kind: SpanKind.SERVER,
        attributes: {
          'http.request.method': context.method,
          'url.path': context.path,
          'url.scheme': context.protocol,
          ...(context.get('user-agent') ? { 'user_agent.original': context.get('user-agent') } : {}),
        },
      },
      parent,
    );
    let ended = false;
    const end = (error?: unknown) => {
      if (ended) return;
      ended = true;
      finish(span, context, error);
    };
    context.res.once('close', () => end());
    try {
      await otelContext.with(trace.setSpan(parent, span), next);
    } catch (error) {
      // Rendered by the app's error middleware as a rule; one that escapes it ends the span here.
      end(error);
      throw error;
    }
  };
}

function finish(span: Span, context: Koa.ParameterizedContext<TracedState>, error?: unknown): void {
  const route = (context as { _matchedRoute?: string })._matchedRoute;
  if (route) {
    span.updateName(`${context.method} ${route}`);
    span.setAttribute('http.route', route);
  }
  const status = error ? 500 : context.status;
  span.setAttribute('http.response.status_code', status);
  const requestId = context.response.get('X-Request-Id');
  if (requestId) span.setAttribute('tessera.request_id', String(requestId));
  if (context.ip) span.setAttribute('client.address', context.ip);
  setCaller(span, context.state.principal);
  if (error || status >= 500) {
    span.setAttribute('error.type', error instanceof Error ? error.name : String(status));
    span.setStatus({ code: SpanStatusCode.ERROR, ...(error instanceof Error ? { message: error.message } : {}) });
  }
  span.end();
}

function setCaller(span: Span, principal: TracedState['principal']): void {
  if (!principal) return;
  span.setAttribute('tessera.account', principal.userId);
  if (principal.keyId) span.setAttribute('tessera.key_id', principal.keyId);
  if (principal.operator) span.setAttribute('tessera.operator', true);
}

/**
 * Runs the rest of the request knowing its caller: the request's span gets the account and key id, and they travel
 * as W3C baggage with the trace context (into the workflow's header, and from it to its activities), so the model
 * calls' spans carry them too. Without a span (tracing off) it is `next()`.
 */
export function withCaller<T>(principal: TracedState['principal'], next: () => Promise<T>): Promise<T> {
  const span = trace.getActiveSpan();
  if (!span || !principal) return next();
  setCaller(span, principal);
  const active = otelContext.active();
  let baggage = propagation.getBaggage(active) ?? propagation.createBaggage();
  baggage = baggage.setEntry(accountBaggage, { value: principal.userId });
  if (principal.keyId) baggage = baggage.setEntry(keyIdBaggage, { value: principal.keyId });
  return otelContext.with(propagation.setBaggage(active, baggage), next);
}
