/**
 * teamBroadcast: a message to every member of a team (workflow id `broadcast-<id>`, search attributes
 * TesseraKind=team-broadcast and TesseraUser=<sender>). The API has recorded the broadcast and one pending delivery
 * per member; this fans out one `deliverTeamBroadcast` activity per member (at most `parallelDeliveries` at a
 * time), each retried with backoff and idempotent per (broadcast, member) (activities/teams/team-broadcasts.ts).
 * A delivery whose retries run out is recorded as failed; the broadcast then ends `delivered`, `partial` or
 * `failed`. The `teamBroadcastStatus` query answers the per-member states while it runs.
 */
import { ActivityFailure, ApplicationFailure, defineQuery, proxyActivities, setHandler } from '@temporalio/workflow';
import type { createTeamActivities, DeliveryStatus } from '../activities/teams/team-broadcasts.ts';

export interface TeamBroadcastInput {
  broadcastId: string;
  teamId: string;
  senderId: string;
  /** The members at the time of sending (their delivery rows exist). */
  recipients: string[];
}

export interface TeamBroadcastState {
  status: string;
  deliveries: Array<{ user_id: string; status: DeliveryStatus; error?: string }>;
}

export const teamBroadcastStatusQuery = defineQuery<TeamBroadcastState>('teamBroadcastStatus');

/** Deliveries in flight at once. */
const parallelDeliveries = 16;

const { deliverTeamBroadcast } = proxyActivities<ReturnType<typeof createTeamActivities>>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 12 },
});

const { failTeamBroadcastDelivery, finishTeamBroadcast } = proxyActivities<ReturnType<typeof createTeamActivities>>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

export async function teamBroadcast(input: TeamBroadcastInput): Promise<TeamBroadcastState> {
  const state: TeamBroadcastState = {
    status: 'running',
    deliveries: input.recipients.map((userId) => ({ user_id: userId, status: 'pending' })),
  };
  setHandler(teamBroadcastStatusQuery, () => state);

  const deliver = async (delivery: TeamBroadcastState['deliveries'][number]) => {
    try {
      const outcome = await deliverTeamBroadcast({ broadcastId: input.broadcastId, userId: delivery.user_id });
      delivery.status = outcome.status;
      if (outcome.error) delivery.error = outcome.error;
    } catch (error) {
      if (!(error instanceof ActivityFailure)) throw error;
      const cause = error.cause instanceof ApplicationFailure ? error.cause.message : error.message;
      delivery.status = 'failed';
      delivery.error = cause;
      await failTeamBroadcastDelivery({ broadcastId: input.broadcastId, userId: delivery.user_id, error: cause });
    }
  };

  const queue = [...state.deliveries];
  const lanes = Array.from({ length: Math.min(parallelDeliveries, queue.length) }, async () => {
    for (let next = queue.shift(); next; next = queue.shift()) await deliver(next);
  });
  await Promise.all(lanes);

  state.status = (await finishTeamBroadcast({ broadcastId: input.broadcastId })).status;
  return state;
}
