// Area A's events (issue 51): what the change feed answers and webhooks deliver. Each is written
// to the outbox (twin_events) in the transaction of the change it reports, so a change rolled back
// reports nothing and a change committed is never lost. Who sees an event: the principal that
// submitted its claim and the creator of its collection (a draw's: the creator only).
import { randomUUID } from 'node:crypto';
import type { AdvisoryLock } from '../../platform/db/sql.ts';
import type { ClaimEventData, CredentialEventData, DrawEventData, Event, EventType } from '../../../generated/openapi/types.gen.ts';

/**
 * Held (shared) by every transaction writing events, from before it takes a transaction id (its
 * first write or row lock) to its end: the feed's horizon tells event writers in flight by it
 * (byInsertingTransaction). Shared: event writers never wait for each other.
 */
export const EVENT_WRITERS: AdvisoryLock = { name: 'twin-event-writers', mode: 'shared' };

export interface NewEvent {
  type: EventType;
  /** The claim's submitter; null for a draw's event. */
  submittedBy: string | null;
  /** The collection's creator. */
  collectionOwner: string | null;
  data: ClaimEventData | CredentialEventData | DrawEventData;
}

export interface StoredEvent {
  seq: number;
  event: Event;
}

/** 128 random bits as 32 hex digits. */
const randomHex = () => randomUUID().replaceAll('-', '');

export const newEventId = () => `evt_${randomHex()}`;

/** What a claim event says of its claim. */
export interface ClaimFacts {
  id: string;
  collectionId: string;
  householdId: string;
  testGroup: ClaimEventData['testGroup'];
  status: ClaimEventData['status'];
  submittedBy: string;
}

/** claim.created, or the event of a claim's status becoming verified or rejected (none for pending). */
export function claimEvent(type: 'claim.created' | 'status', claim: ClaimFacts, collectionOwner: string | null): NewEvent | undefined {
  const eventType: EventType | undefined = type === 'claim.created' ? type : claim.status === 'verified' ? 'claim.verified' : claim.status === 'rejected' ? 'claim.rejected' : undefined;
  if (!eventType) return undefined;
  return {
    type: eventType,
    submittedBy: claim.submittedBy,
    collectionOwner,
    data: {
      claimId: claim.id,
      collectionId: claim.collectionId,
      householdId: claim.householdId,
      testGroup: claim.testGroup,
      status: claim.status,
      submittedBy: claim.submittedBy,
    },
  };
}

/** The events of a claim just stored: created, and verified or rejected when it already is. */
export function newClaimEvents(claim: ClaimFacts, collectionOwner: string | null): NewEvent[] {
  return [claimEvent('claim.created', claim, collectionOwner), claimEvent('status', claim, collectionOwner)].filter((e) => e !== undefined);
}

const CREDENTIAL_EVENT = { revoke: 'credential.revoked', suspend: 'credential.suspended', reinstate: 'credential.reinstated' } as const;

export function credentialEvent(
  action: CredentialEventData['action'],
  claim: { id: string; collectionId: string; submittedBy: string; credentialId: string },
  collectionOwner: string | null,
  reason: string,
): NewEvent {
  return {
    type: CREDENTIAL_EVENT[action],
    submittedBy: claim.submittedBy,
    collectionOwner,
    data: { claimId: claim.id, collectionId: claim.collectionId, credentialId: claim.credentialId, action, reason },
  };
}

export function drawPublished(drawId: string, collectionId: string, collectionOwner: string | null): NewEvent {
  return { type: 'draw.published', submittedBy: null, collectionOwner, data: { drawId, collectionId } };
}
