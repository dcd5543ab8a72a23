/**
 * The built-in tools (spec section 2), each a file in this folder (the workspace suite's in ./google/). The chat turn
 * offers the model the ones the deployment has configured (`GET /api/v1/integrations` lists all of them).
 */
import { calculatorTool } from './calculator.ts';
import { codeExecuteTool } from './code-execute.ts';
import { delegateAgentTool } from './delegate-agent.ts';
import { fileListTool } from './file-list.ts';
import { fileReadTool } from './file-read.ts';
import { fileWriteTool } from './file-write.ts';
import { githubCommentTool } from './github-comment.ts';
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
import { gmailSearchTool } from './google/gmail-search.ts';
import { gmailReadTool } from './google/gmail-read.ts';
import { gmailDraftTool } from './google/gmail-draft.ts';
import { gmailSendTool } from './google/gmail-send.ts';
import { calendarListTool } from './google/calendar-list.ts';
import { calendarFreeBusyTool } from './google/calendar-free-busy.ts';
import { calendarCreateTool } from './google/calendar-create.ts';
import { calendarUpdateTool } from './google/calendar-update.ts';
import { calendarDeleteTool } from './google/calendar-delete.ts';
import { driveSearchTool } from './google/drive-search.ts';
import { driveReadTool } from './google/drive-read.ts';
import { driveUploadTool } from './google/drive-upload.ts';
import { sheetsReadTool } from './google/sheets-read.ts';
import { sheetsAppendTool } from './google/sheets-append.ts';
import { sheetsUpdateTool } from './google/sheets-update.ts';
import { docsReadTool } from './google/docs-read.ts';
import { docsCreateTool } from './google/docs-create.ts';
import { docsAppendTool } from './google/docs-append.ts';
import { contactsSearchTool } from './google/contacts-search.ts';
import { tasksListTool } from './google/tasks-list.ts';
import { tasksAddTool } from './google/tasks-add.ts';
import { tasksCompleteTool } from './google/tasks-complete.ts';
import type { ToolDefinition } from './tool.ts';
import type { ToolSettings } from '../../config/tool-settings.ts';

/** Tools the agent service itself provides to agents (built in the agent service, and in the registry below). */
export const agentServiceToolNames = ['update_plan', 'send_email'] as const;

/** Every tool name an agent may list (config/load-agents.ts checks the catalogue against it). */
export function knownToolNames(): Set<string> {
  return new Set([...builtInTools.map((tool) => tool.name), ...agentServiceToolNames]);
}

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
  githubCommentTool,
  // The workspace suite (./google/): the user's Gmail, Calendar, Drive, Sheets, Docs, Contacts and Tasks.
  gmailSearchTool,
  gmailReadTool,
  gmailDraftTool,
  gmailSendTool,
  calendarListTool,
  calendarFreeBusyTool,
  calendarCreateTool,
  calendarUpdateTool,
  calendarDeleteTool,
  driveSearchTool,
  driveReadTool,
  driveUploadTool,
  sheetsReadTool,
  sheetsAppendTool,
  sheetsUpdateTool,
  docsReadTool,
  docsCreateTool,
  docsAppendTool,
  contactsSearchTool,
  tasksListTool,
  tasksAddTool,
  tasksCompleteTool,
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
