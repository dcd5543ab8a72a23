/**
 * The router's keyword fallback measured on a labelled set of messages written apart from the catalogue (not its
 * examples): accuracy and the confidence it reports when right and when wrong. The fast-model path is measured on
 * real models only (the simulator's classifier is word overlap), so this is the floor routing keeps when no model
 * answers. Figures: docs/agent-service.md, "Agent service: chat".
 */
import { expect, it } from '@jest/globals';
import { loadAgents } from '../../config/load-agents.ts';
import { knownToolNames } from '../../activities/tools/index.ts';
import { loadCatalogue } from '../../config/load-catalogue.ts';
import { decide, keywordScores } from '../../api/services/agents/agent-router.ts';

const labelled: Array<[string, string]> = [
  ['hi, can you explain what a mortgage is?', 'general'],
  ['what is the weather like in Oslo today', 'general'],
  ['investigate the latest studies on intermittent fasting and cite sources', 'researcher'],
  ['compare the three main cloud providers for a small startup', 'researcher'],
  ['my python script throws a KeyError, can you fix the bug?', 'coder'],
  ['write a SQL query that finds duplicate customer rows', 'coder'],
  ['write a short essay about the history of jazz', 'writer'],
  ['proofread my cover letter and make it more persuasive', 'writer'],
  ['analyze these sales numbers and tell me the trend', 'analyst'],
  ['what is the average and median of 4, 8, 15, 16, 23, 42?', 'analyst'],
  ['translate "where is the train station" into German', 'translator'],
  ['how do you say thank you very much in Japanese', 'translator'],
  ['make a plan for learning Spanish in six months', 'planner'],
  ['break my house move down into weekly steps with a timeline', 'planner'],
  ['send an email to my landlord about the broken heater', 'mail'],
  ['check my inbox for anything from the bank', 'mail'],
  ['schedule a meeting with Tom on Friday at 10', 'calendar'],
  ['am I free on Thursday afternoon? check my calendar', 'calendar'],
  ['find the PDF contract in my google drive', 'drive'],
  ['share the folder with the design files with Anna', 'drive'],
  ['add a column to my budget spreadsheet that totals each row', 'sheets'],
  ['fix the vlookup formula in my sheet', 'sheets'],
  ['create a google docs document with the meeting notes', 'docs'],
  ['draft a project proposal document from this outline', 'docs'],
  ['what is the phone number of Maria in my contacts', 'contacts'],
  ['merge the duplicate contacts in my address book', 'contacts'],
  ['add "buy milk" to my to-do list', 'tasks'],
  ['mark the task about the tax return as done', 'tasks'],
];

it('picks the labelled agent for most messages by keywords alone, more confident when right', () => {
  const catalogue = loadCatalogue({}).catalogue;
  const agents = loadAgents(catalogue, knownToolNames()).map((agent) => ({
    ...agent,
    keywords: agent.routing.keywords,
  }));
  let right = 0;
  const confidence = { right: [] as number[], wrong: [] as number[] };
  const misses: string[] = [];
  for (const [message, expected] of labelled) {
    const decision = decide(agents, keywordScores(message, agents), 'keywords');
    if (decision.agent.id === expected) {
      right++;
      confidence.right.push(decision.confidence);
    } else {
      confidence.wrong.push(decision.confidence);
      misses.push(`${message} → ${decision.agent.id} (expected ${expected})`);
    }
  }
  const mean = (values: number[]) => (values.length ? values.reduce((a, b) => a + b, 0) / values.length : 0);
  const accuracy = right / labelled.length;
  process.stderr.write(
    `[routing] keyword fallback: ${right}/${labelled.length} right (${(accuracy * 100).toFixed(0)}%); ` +
      `mean confidence ${mean(confidence.right).toFixed(2)} when right, ${mean(confidence.wrong).toFixed(2)} when wrong\n` +
      misses.map((miss) => `  miss: ${miss}\n`).join(''),
  );
  expect(accuracy).toBeGreaterThanOrEqual(0.75);
  if (confidence.wrong.length) expect(mean(confidence.right)).toBeGreaterThan(mean(confidence.wrong));
});
