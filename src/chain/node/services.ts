// The IXO query services of the embedded node: module params from config, entities, IID
// documents, claims and collections from the database (via ChainReadModel).
import { create, type DescMessage, type DescService, type MessageInitShape, type MessageShape } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError, type ConnectRouter, type HandlerContext, type ServiceImpl } from '@connectrpc/connect';
import type { Config } from '../../config.ts';
import {
  ClaimSchema,
  CollectionSchema,
  CollectionState,
  EvaluationStatus,
  type Claim,
  type Collection,
} from '../../../generated/proto/ixo/claims/v1beta1/claims_pb.ts';
import { EntitySchema, type Entity as EntityMessage } from '../../../generated/proto/ixo/entity/v1beta1/entity_pb.ts';
import { IidDocumentSchema, type IidDocument } from '../../../generated/proto/ixo/iid/v1beta1/iid_pb.ts';
import { legacyDecToWire } from '../legacy-dec.ts';
import { PROTOCOL_TYPE } from '../../twins/index.ts';
import { ClaimsQuery, EntityQuery, IidQuery, methodFullName, TokenQuery } from '../services.ts';
import type { ChainReadModel, ClaimView, CollectionWithCounts, Entity, KptClaim } from './model.ts';
import { paginate } from './pagination.ts';

const ts = (iso: string | null | undefined) => (iso ? timestampFromDate(new Date(iso)) : undefined);

const notFound = (what: string, id: string) => new ConnectError(`${what} ${id} not found`, Code.NotFound);

/**
 * A query the node serves but Hearth holds no data for (disputes, intents, member budgets,
 * deposits, tokens): UNIMPLEMENTED, which the gateway answers as 501 like a disabled method.
 */
const notHeld = (what: string) => async (): Promise<never> => {
  throw new ConnectError(`this node holds no ${what}`, Code.Unimplemented);
};

function requireId(id: string): string {
  if (!id) throw new ConnectError('id must not be empty', Code.InvalidArgument);
  return id;
}

/** versionId changes whenever the entity does, like the chain's per-update version. */
const versionOf = (e: Entity) => `${e.did}#${e.updatedAt}`;

/** The W3C DID document of an entity, as IXO's iid module holds it. */
export function iidDocumentOf(e: Entity): IidDocument {
  return create(IidDocumentSchema, {
    context: [{ key: '@context', val: 'https://www.w3.org/ns/did/v1' }],
    id: e.did,
    controller: [e.controller],
    service: e.services.map((s) => ({ id: s.id, type: s.type, serviceEndpoint: s.endpoint })),
    // The protocol and the relationship chain (implements, generates, verifies...) are linked
    // entities. A Protocol's relationships name entity types (role -> OracleEntity), not entities.
    linkedEntity: [
      ...(e.protocol ? [{ type: 'Protocol', id: e.protocol, relationship: 'protocol', service: '' }] : []),
      ...(e.type === PROTOCOL_TYPE ? [] : Object.entries(e.relationships).map(([role, id]) => ({ type: 'Entity', id, relationship: role, service: '' }))),
    ],
    metadata: { versionId: versionOf(e), created: ts(e.createdAt), updated: ts(e.updatedAt), deactivated: false },
  });
}

export function entityOf(e: Entity): EntityMessage {
  return create(EntitySchema, {
    id: e.did,
    type: e.type,
    startDate: ts(e.createdAt),
    credentials: e.verifiableCredential.map((c) => `${c.type}:${c.issuer}`),
    entityVerified: e.verifiableCredential.length > 0,
    metadata: { versionId: versionOf(e), created: ts(e.createdAt), updated: ts(e.updatedAt) },
  });
}

/** Area A's claim status -> the claims module's evaluation status. */
export const EVALUATION_STATUS: Record<KptClaim['status'], EvaluationStatus> = {
  pending: EvaluationStatus.PENDING,
  verified: EvaluationStatus.APPROVED,
  rejected: EvaluationStatus.REJECTED,
};

/**
 * A verified claim whose credential is withdrawn is no longer approved: INVALIDATED once revoked
 * (for good), FLAGGED while suspended (it may be reinstated).
 */
function evaluationStatusOf(c: ClaimView): EvaluationStatus {
  if (c.status === 'verified' && c.withdrawn === 'revoked') return EvaluationStatus.INVALIDATED;
  if (c.status === 'verified' && c.withdrawn === 'suspended') return EvaluationStatus.FLAGGED;
  return EVALUATION_STATUS[c.status];
}

export function claimOf(c: ClaimView): Claim {
  const evaluated = c.status !== 'pending';
  return create(ClaimSchema, {
    collectionId: c.collectionId,
    agentDid: c.householdId,
    submissionDate: ts(c.createdAt),
    claimId: c.id,
    // The chain sets every payment status (NO_PAYMENT) when a claim is submitted; KPT claims carry no payments.
    paymentsStatus: {},
    evaluation: {
      claimId: c.id,
      collectionId: c.collectionId,
      oracle: evaluated ? c.oracle : '',
      agentDid: evaluated ? c.oracle : '',
      status: evaluationStatusOf(c),
      verificationProof: c.credentialId,
      evaluationDate: evaluated ? ts(c.verifiedAt ?? c.updatedAt) : undefined,
    },
  });
}

export function collectionOf(c: CollectionWithCounts): Collection {
  return create(CollectionSchema, {
    id: c.id,
    admin: c.createdBy,
    startDate: ts(c.createdAt),
    count: BigInt(c.count),
    evaluated: BigInt(c.evaluated),
    approved: BigInt(c.approved),
    rejected: BigInt(c.rejected),
    invalidated: BigInt(c.revoked),
    flagged: BigInt(c.suspended),
    state: CollectionState.OPEN,
  });
}

export interface NodeDeps {
  config: Config;
  reads: ChainReadModel;
  /** Full method names answered UNIMPLEMENTED (CHAIN_DISABLED_METHODS). */
  disabled: ReadonlySet<string>;
}

export type UnaryHandler = (request: MessageShape<DescMessage>, context: HandlerContext) => Promise<MessageInitShape<DescMessage>>;

/** One compiled-in service and the node's implementation of its enabled methods. */
export interface ServiceBinding {
  service: DescService;
  impl: Partial<Record<string, UnaryHandler>>;
}

/** The node's services; a disabled method is left out, so it answers UNIMPLEMENTED. */
export function queryServices({ config, reads, disabled }: NodeDeps): ServiceBinding[] {
  const entity: ServiceImpl<typeof EntityQuery> = {
    async params() {
      return {
        params: {
          nftContractAddress: config.CHAIN_ENTITY_NFT_CONTRACT_ADDRESS,
          nftContractMinter: config.CHAIN_ENTITY_NFT_CONTRACT_MINTER,
          createSequence: BigInt(await reads.entities.count()),
        },
      };
    },
    async entity(req) {
      const e = await reads.getEntity(requireId(req.id));
      if (!e) throw notFound('entity', req.id);
      return { entity: entityOf(e), iidDocument: iidDocumentOf(e) };
    },
    async entityMetaData(req) {
      const e = await reads.getEntity(requireId(req.id));
      if (!e) throw notFound('entity', req.id);
      return { entity: entityOf(e) };
    },
    async entityIidDocument(req) {
      const e = await reads.getEntity(requireId(req.id));
      if (!e) throw notFound('entity', req.id);
      return { iidDocument: iidDocumentOf(e) };
    },
    async entityVerified(req) {
      const e = await reads.getEntity(requireId(req.id));
      if (!e) throw notFound('entity', req.id);
      return { entityVerified: entityOf(e).entityVerified };
    },
    async entityList(req) {
      const page = await paginate(reads.entities, req.pagination);
      return { entities: page.items.map(entityOf), pagination: page.pagination };
    },
  };
  const iid: ServiceImpl<typeof IidQuery> = {
    async iidDocuments(req) {
      const page = await paginate(reads.entities, req.pagination);
      return { iidDocuments: page.items.map(iidDocumentOf), pagination: page.pagination };
    },
    async iidDocument(req) {
      const e = await reads.getEntity(requireId(req.id));
      if (!e) throw notFound('did', req.id);
      return { iidDocument: iidDocumentOf(e) };
    },
  };
  const claims: ServiceImpl<typeof ClaimsQuery> = {
    async params() {
      return {
        params: {
          collectionSequence: BigInt(await reads.collections.count()) + 1n,
          ixoAccount: config.CHAIN_CLAIMS_IXO_ACCOUNT,
          networkFeePercentage: legacyDecToWire(config.CHAIN_CLAIMS_NETWORK_FEE_PERCENTAGE),
          nodeFeePercentage: legacyDecToWire(config.CHAIN_CLAIMS_NODE_FEE_PERCENTAGE),
          intentSequence: 1n,
        },
      };
    },
    async collection(req) {
      const c = await reads.getCollection(requireId(req.id));
      if (!c) throw notFound('collection', req.id);
      return { collection: collectionOf(c) };
    },
    async collectionList(req) {
      const page = await paginate(reads.collections, req.pagination);
      return { collections: page.items.map(collectionOf), pagination: page.pagination };
    },
    async claim(req) {
      const c = await reads.getClaim(requireId(req.id));
      if (!c) throw notFound('claim', req.id);
      return { claim: claimOf(c) };
    },
    async claimList(req) {
      const page = await paginate(reads.claims, req.pagination);
      return { claims: page.items.map(claimOf), pagination: page.pagination };
    },
    dispute: notHeld('disputes'),
    disputeList: notHeld('disputes'),
    disputeBySubject: notHeld('disputes'),
    disputeListForSubject: notHeld('disputes'),
    intent: notHeld('intents'),
    intentList: notHeld('intents'),
    collectionMember: notHeld('collection member budgets'),
    collectionMemberList: notHeld('collection member budgets'),
    agentDepositBalance: notHeld('agent deposit balances'),
    agentDepositBalanceList: notHeld('agent deposit balances'),
  };
  const token: ServiceImpl<typeof TokenQuery> = {
    async params() {
      return { params: { ixo1155ContractCode: BigInt(config.CHAIN_TOKEN_IXO1155_CONTRACT_CODE) } };
    },
    tokenMetadata: notHeld('tokens'),
    tokenList: notHeld('tokens'),
    tokenDoc: notHeld('tokens'),
  };

  const bind = (service: DescService, impl: Record<string, unknown>): ServiceBinding => ({
    service,
    impl: Object.fromEntries(service.methods.filter((m) => !disabled.has(methodFullName(m))).map((m) => [m.localName, impl[m.localName]])) as ServiceBinding['impl'],
  });
  return [bind(EntityQuery, entity), bind(IidQuery, iid), bind(ClaimsQuery, claims), bind(TokenQuery, token)];
}

/** The services on a connect router (the gRPC server). */
export function registerServices(bindings: ServiceBinding[]): (router: ConnectRouter) => void {
  return (router) => {
    for (const { service, impl } of bindings) router.service(service, impl as never);
  };
}
