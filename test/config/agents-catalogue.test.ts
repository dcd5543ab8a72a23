/**
 * The agent catalogue loader (config/load-agents.ts): the shipped config/agents.yaml loads against the shipped model
 * catalogue, and a catalogue with an unknown tool, a duplicate id, an unknown model or a stray field is refused with
 * the offending path; AGENT_CATALOGUE_PATH-style paths load another file.
 */
import { describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { loadCatalogue } from '../../config/load-catalogue.ts';
import { defaultAgentCataloguePath, loadAgents, validateAgentCatalogue } from '../../config/load-agents.ts';
import { agentServiceToolNames, knownToolNames } from '../../activities/tools/index.ts';

const { catalogue } = loadCatalogue({});
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const shipped = (): { agents: any[] } => parse(readFileSync(defaultAgentCataloguePath, 'utf8'));

describe('config/agents.yaml', () => {
  it('loads: the built-in agents, workspace agents marked, every tool known and every model in the catalogue', () => {
    const agents = loadAgents(catalogue, knownToolNames());
    const ids = agents.map((agent) => agent.id);
    expect(ids).toEqual(
      expect.arrayContaining(['general', 'researcher', 'coder', 'writer', 'analyst', 'translator', 'planner']),
    );
    const workspace = agents.filter((agent) => agent.workspace).map((agent) => [agent.id, agent.workspace]);
    expect(workspace).toEqual(
      ['mail', 'calendar', 'drive', 'sheets', 'docs', 'contacts', 'tasks'].map((name) => [name, name]),
    );
    for (const agent of agents) {
      expect(agent.systemPrompt.length).toBeGreaterThan(200);
      expect(agent.routing.keywords.length).toBeGreaterThan(0);
    }
    expect(agents.filter((agent) => agent.tools.includes('save_memory')).length).toBeGreaterThan(10);
    // Each workspace agent has its Google tools (activities/tools/google/).
    const toolsOf = (id: string) => agents.find((agent) => agent.id === id)!.tools;
    expect(toolsOf('mail')).toEqual(
      expect.arrayContaining(['gmail_search', 'gmail_read', 'gmail_draft', 'gmail_send']),
    );
    expect(toolsOf('calendar')).toEqual(
      expect.arrayContaining([
        'calendar_list',
        'calendar_free_busy',
        'calendar_create',
        'calendar_update',
        'calendar_delete',
      ]),
    );
    expect(toolsOf('drive')).toEqual(expect.arrayContaining(['drive_search', 'drive_read', 'drive_upload']));
    expect(toolsOf('sheets')).toEqual(expect.arrayContaining(['sheets_read', 'sheets_append', 'sheets_update']));
    expect(toolsOf('docs')).toEqual(expect.arrayContaining(['docs_read', 'docs_create', 'docs_append']));
    expect(toolsOf('contacts')).toContain('contacts_search');
    expect(toolsOf('tasks')).toEqual(expect.arrayContaining(['tasks_list', 'tasks_add', 'tasks_complete']));
    expect([...knownToolNames()]).toEqual(
      expect.arrayContaining([...agentServiceToolNames, 'save_memory', 'web_search', 'code_execute']),
    );
  });

  it('loads another file by path (AGENT_CATALOGUE_PATH)', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'agents-')), 'agents.yaml');
    const file = shipped();
    writeFileSync(path, stringify({ agents: [file.agents[0]] }));
    expect(loadAgents(catalogue, knownToolNames(), path).map((agent) => agent.id)).toEqual([file.agents[0].id]);
  });
});

describe('an invalid catalogue', () => {
  const refused = (mutate: (file: { agents: Record<string, unknown>[] }) => void) => {
    const file = shipped();
    mutate(file);
    return () => validateAgentCatalogue(file, catalogue, knownToolNames());
  };

  it('names an unknown tool', () => {
    expect(
      refused((file) => {
        file.agents[2]!.tools = ['web_search', 'launch_rockets'];
      }),
    ).toThrow('agents.2.tools.1: unknown tool launch_rockets');
  });

  it('names a duplicate id', () => {
    expect(
      refused((file) => {
        file.agents.push({ ...file.agents[0]!, name: 'Another general' });
      }),
    ).toThrow(/agents\.\d+\.id: duplicate agent id general/);
  });

  it('names an unknown model, a bad workspace, a stray field and an upper-case keyword', () => {
    expect(refused((file) => void (file.agents[1]!.model = 'gpt-99'))).toThrow('agents.1.model: unknown model gpt-99');
    expect(refused((file) => void (file.agents[0]!.workspace = 'fax'))).toThrow('agents.0.workspace');
    expect(refused((file) => void (file.agents[0]!.owner = 'me'))).toThrow('agents.0');
    expect(refused((file) => void (file.agents[0]!.routing = { keywords: ['Hello'] }))).toThrow(
      'agents.0.routing.keywords.0: keywords are lowercase',
    );
    expect(refused((file) => void (file.agents[0]!.id = 'custom'))).toThrow('agents.0.id');
    expect(() => validateAgentCatalogue({ agents: [] }, catalogue, knownToolNames())).toThrow('agents');
  });
});
