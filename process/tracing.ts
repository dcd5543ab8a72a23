/**
 * OpenTelemetry traces, exported over OTLP/HTTP when the operator names a collector (docs/operations.md, "Traces
 * (OpenTelemetry)"). With neither `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` nor `OTEL_EXPORTER_OTLP_ENDPOINT` set nothing
 * here runs: the SDK is never loaded (its modules are imported only when tracing starts), no interceptor is installed,
 * the workflow bundle is the usual one, and what remains per request is `trace.getActiveSpan()` finding no span.
 *
 * Started, one SDK per process serves the API's spans (api/tracing.ts), the Temporal client's (the workflow start,
 * carrying the context to the workflow in a header), the workers' (the workflow's spans, made in its sandbox and
 * handed out through the `exporter` sink, and each activity's) and the model calls' (activities/model-call-spans.ts).
 */
import { createRequire } from 'node:module';
import type { Tracer } from '@opentelemetry/api';
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { WorkflowClientInterceptor } from '@temporalio/client';
import type { ActivityInterceptorsFactory, WorkerInterceptors, WorkerOptions } from '@temporalio/worker';
import { version } from './version.ts';

export interface Tracing {
  /** The platform's own spans (requests, model calls). */
  readonly tracer: Tracer;
  /** OTEL_GENAI_CAPTURE_CONTENT=true: model calls record their messages and answers (off by default). */
  readonly captureContent: boolean;
  /** For the Temporal client that starts workflows: the start's span, and its context in the workflow's header. */
  readonly workflowClientInterceptors: WorkflowClientInterceptor[];
  /** For a worker: its activities' spans, and the sink the workflow sandbox exports its spans through. */
  readonly workerInterceptors: WorkerInterceptors;
  readonly sinks: NonNullable<WorkerOptions['sinks']>;
  /** Bundled with the workflow code (worker/create-worker.ts): the workflow's own spans. */
  readonly workflowInterceptorModules: string[];
  /** Sends the spans still queued (at shutdown; tests). */
  flush(): Promise<void>;
}

/** Where spans go, from the environment: null when tracing is off. */
export function tracesEndpoint(environment: Record<string, string | undefined>): string | null {
  if (environment.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return null;
  const traces = environment.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  if (traces) return traces;
  const base = environment.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  // The OTLP convention: the signal's path is appended to the base endpoint, the per-signal one is used as it is.
  return base ? `${base.replace(/\/+$/, '')}/v1/traces` : null;
}

let starting: Promise<Tracing | null> | undefined;
let started: Tracing | null = null;

/**
 * Starts tracing for this process when the environment names a collector; the same instance on later calls (the
 * API and its in-process worker, a test's second replica). Null when tracing is off.
 */
export function startTracing(
  environment: Record<string, string | undefined> = process.env,
  role: 'api' | 'worker' = 'api',
): Promise<Tracing | null> {
  starting ??= start(environment, role).then((tracing) => (started = tracing));
  return starting;
}

/** This process's tracing, once started; null when off or not started. */
export function processTracing(): Tracing | null {
  return started;
}

async function start(environment: Record<string, string | undefined>, role: string): Promise<Tracing | null> {
  const url = tracesEndpoint(environment);
  if (!url) return null;
  const [api, { NodeTracerProvider }, { BatchSpanProcessor }, { Resource }, { OTLPTraceExporter }, temporal] =
    await Promise.all([
      import('@opentelemetry/api'),
      import('@opentelemetry/sdk-trace-node'),
      import('@opentelemetry/sdk-trace-base'),
      import('@opentelemetry/resources'),
      import('@opentelemetry/exporter-trace-otlp-http'),
      import('@temporalio/interceptors-opentelemetry'),
    ]);
  const resource = new Resource({
    'service.name': environment.OTEL_SERVICE_NAME?.trim() || 'tessera',
    'service.version': version,
    'tessera.process': role,
    ...keyValues(environment.OTEL_RESOURCE_ATTRIBUTES),
  });
  const exporter = new OTLPTraceExporter({
    url,
    headers: {
      ...keyValues(environment.OTEL_EXPORTER_OTLP_HEADERS),
      ...keyValues(environment.OTEL_EXPORTER_OTLP_TRACES_HEADERS),
    },
    ...optionalNumber('timeoutMillis', environment.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT),
  });
  const processor: SpanProcessor = new BatchSpanProcessor(exporter, {
    ...optionalNumber('scheduledDelayMillis', environment.OTEL_BSP_SCHEDULE_DELAY),
    ...optionalNumber('maxQueueSize', environment.OTEL_BSP_MAX_QUEUE_SIZE),
    ...optionalNumber('maxExportBatchSize', environment.OTEL_BSP_MAX_EXPORT_BATCH_SIZE),
    ...optionalNumber('exportTimeoutMillis', environment.OTEL_BSP_EXPORT_TIMEOUT),
  });
  const provider = new NodeTracerProvider({ resource, spanProcessors: [processor] });
  // The global provider, AsyncLocalStorage context and W3C trace-context + baggage propagation.
  provider.register();
  const activity: ActivityInterceptorsFactory[] = [
    (context) => ({
      inbound: new temporal.OpenTelemetryActivityInboundInterceptor(context),
      outbound: new temporal.OpenTelemetryActivityOutboundInterceptor(context),
    }),
  ];
  const require = createRequire(import.meta.url);
  return {
    tracer: api.trace.getTracer('tessera', version),
    captureContent: environment.OTEL_GENAI_CAPTURE_CONTENT?.trim().toLowerCase() === 'true',
    workflowClientInterceptors: [new temporal.OpenTelemetryWorkflowClientInterceptor()],
    workerInterceptors: { activity },
    sinks: { exporter: temporal.makeWorkflowExporter(processor, resource) },
    workflowInterceptorModules: [require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors')],
    flush: () => provider.forceFlush(),
  };
}

/** `k1=v1,k2=v2` (OTEL_RESOURCE_ATTRIBUTES, OTEL_EXPORTER_OTLP_HEADERS), values percent-decoded. */
function keyValues(text: string | undefined): Record<string, string> {
  const entries: Record<string, string> = {};
  for (const pair of text?.split(',') ?? []) {
    const at = pair.indexOf('=');
    if (at <= 0) continue;
    const key = pair.slice(0, at).trim();
    const value = pair.slice(at + 1).trim();
    if (!key) continue;
    try {
      entries[key] = decodeURIComponent(value);
    } catch {
      entries[key] = value;
    }
  }
  return entries;
}

function optionalNumber<K extends string>(key: K, text: string | undefined): Partial<Record<K, number>> {
  const value = Number(text?.trim());
  return text?.trim() && Number.isFinite(value) && value >= 0 ? ({ [key]: value } as Record<K, number>) : {};
}
