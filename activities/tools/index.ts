/**
 * The built-in tools (spec section 2), each a file in this folder. The chat turn offers the model the ones the
 * deployment has configured (`GET /api/v1/integrations` lists all of them).
 */
import { calculatorTool } from './calculator.ts';
import { codeExecuteTool } from './code-execute.ts';
import { delegateAgentTool } from './delegate-agent.ts';
import { fileListTool } from './file-list.ts';
import { fileReadTool } from './file-read.ts';
import { fileWriteTool } from './file-write.ts';
import { publishSiteTool } from './publish-site.ts';
import { ragSearchTool } from './rag-search.ts';
import { readUploadTool } from './read-upload.ts';
import { sendEmailTool } from './send-email.ts';
import { updatePlanTool } from './update-plan.ts';
import { saveMemoryTool } from './save-memory.ts';
import { sqlQueryTool } from './sql-query.ts';
import { weatherTool } from './weather.ts';
import { webFetchTool } from './web-fetch.ts';
import { webSearchTool } from './web-search.ts';
import type { ToolDefinition, ToolSettings } from './tool.ts';

export const builtInTools: ToolDefinition[] = [
  webSearchTool,
  weatherTool,
  calculatorTool,
  webFetchTool,
  fileReadTool,
  fileWriteTool,
  fileListTool,
  codeExecuteTool,
  updatePlanTool,
  sendEmailTool,
  saveMemoryTool,
  publishSiteTool,
  delegateAgentTool,
  sqlQueryTool,
  ragSearchTool,
  readUploadTool,
];

const byName = new Map(builtInTools.map((tool) => [tool.name, tool]));

export function toolByName(name: string): ToolDefinition | undefined {
  return byName.get(name);
}

/** The tools the gateway's session chat offers: configured, and neither agents-only nor needing approval. */
export function configuredTools(settings: ToolSettings): ToolDefinition[] {
  return builtInTools.filter((tool) => tool.configured(settings) && !tool.agentsOnly && !tool.needsApproval);
}

/**
 * Starts the engines of the tools that have one (the calculator's thread, code_execute's runners) so that calls find
 * them ready: every process that runs turns calls this when its worker starts. Nothing waits for them; a call that
 * comes first waits for its engine to start, and a failure to start is the call's error too (and `onFailure`'s).
 */
export function warmToolEngines(settings: ToolSettings, onFailure: (tool: string, error: unknown) => void): void {
  for (const tool of builtInTools) {
    void tool.warm?.(settings).catch((error: unknown) => onFailure(tool.name, error));
  }
}
