// The IXO query services of the embedded node: module params from config, entities, IID
// documents, claims and collections from the database (via ChainReadModel).
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError, type ConnectRouter, type ServiceImpl } from '@connectrpc/connect';
import type { Config } from '../../config.ts';
import {
  CollectionState,
  EvaluationStatus,
  type Claim,
  type Collection,
} from '../../../generated/proto/ixo/claims/v1beta1/claims_pb.ts';
import type { Entity } from '../../../generated/proto/ixo/entity/v1beta1/entity_pb.ts';
import type { IidDocument } from '../../../generated/proto/ixo/iid/v1beta1/iid_pb.ts';
import { legacyDecToWire } from '../legacy-dec.ts';
import { ClaimsQuery, EntityQuery, IidQuery, methodFullName, TokenQuery } from '../services.ts';
import type { ChainReadModel, ClaimRecord, CollectionRecord, EntityRecord } from './model.ts';
import { paginate } from './pagination.ts';

const ts = (iso: string | null | undefined) => (iso ? timestampFromDate(new Date(iso)) : undefined);

const notFound = (what: string, id: string) => new ConnectError(`${what} ${id} not found`, Code.NotFound);

function requireId(id: string): string {
  if (!id) throw new ConnectError('id must not be empty', Code.InvalidArgument);
  return id;
}

/** The W3C DID document of an entity, as IXO's iid module holds it. */
export function iidDocumentOf(e: EntityRecord): IidDocument {
  return {
    $typeName: 'ixo.iid.v1beta1.IidDocument',
    context: [{ $typeName: 'ixo.iid.v1beta1.Context', key: '@context', val: 'https://www.w3.org/ns/did/v1' }],
    id: e.did,
    controller: [e.controller],
    verificationMethod: [],
    service: e.services.map((s) => ({ $typeName: 'ixo.iid.v1beta1.Service', id: s.id, type: s.type, serviceEndpoint: s.endpoint })),
    authentication: [],
    assertionMethod: [],
    keyAgreement: [],
    capabilityInvocation: [],
    capabilityDelegation: [],
    linkedResource: [],
    linkedClaim: [],
    accordedRight: [],
    linkedEntity: e.protocol
      ? [{ $typeName: 'ixo.iid.v1beta1.LinkedEntity', type: 'Protocol', id: e.protocol, relationship: 'protocol', service: '' }]
      : [],
    alsoKnownAs: '',
    metadata: {
      $typeName: 'ixo.iid.v1beta1.IidMetadata',
      versionId: `${e.did}:${e.updatedAt}`,
      created: ts(e.createdAt),
      updated: ts(e.updatedAt),
      deactivated: false,
    },
  };
}

export function entityOf(e: EntityRecord): Entity {
  return {
    $typeName: 'ixo.entity.v1beta1.Entity',
    id: e.did,
    type: e.type,
    startDate: ts(e.createdAt),
    endDate: undefined,
    status: 0,
    relayerNode: '',
    credentials: e.credentials.map((c) => `${c.type}:${c.issuer}`),
    entityVerified: e.credentials.length > 0,
    metadata: { $typeName: 'ixo.entity.v1beta1.EntityMetadata', versionId: `${e.did}:${e.updatedAt}`, created: ts(e.createdAt), updated: ts(e.updatedAt) },
    accounts: [],
  };
}

const EVALUATION: Record<ClaimRecord['evaluation'], EvaluationStatus> = {
  PENDING: EvaluationStatus.PENDING,
  APPROVED: EvaluationStatus.APPROVED,
  REJECTED: EvaluationStatus.REJECTED,
};

export function claimOf(c: ClaimRecord): Claim {
  return {
    $typeName: 'ixo.claims.v1beta1.Claim',
    collectionId: c.collectionId,
    agentDid: c.agentDid,
    agentAddress: '',
    submissionDate: ts(c.submittedAt),
    claimId: c.id,
    // A pending claim has no evaluation yet, as on chain.
    evaluation:
      c.evaluation === 'PENDING'
        ? undefined
        : {
            $typeName: 'ixo.claims.v1beta1.Evaluation',
            claimId: c.id,
            collectionId: c.collectionId,
            oracle: c.oracle,
            agentDid: c.oracle,
            agentAddress: '',
            status: EVALUATION[c.evaluation],
            reason: 0,
            verificationProof: c.verificationProof,
            evaluationDate: ts(c.evaluatedAt),
            amount: [],
          },
    paymentsStatus: undefined,
    useIntent: false,
    amount: [],
  };
}

export function collectionOf(c: CollectionRecord): Collection {
  return {
    $typeName: 'ixo.claims.v1beta1.Collection',
    id: c.id,
    entity: c.entity,
    admin: c.admin,
    protocol: c.protocol,
    startDate: ts(c.startDate),
    endDate: ts(c.endDate),
    quota: 0n,
    count: BigInt(c.count),
    evaluated: BigInt(c.evaluated),
    approved: BigInt(c.approved),
    rejected: BigInt(c.rejected),
    disputed: 0n,
    state: c.open ? CollectionState.OPEN : CollectionState.CLOSED,
    payments: undefined,
    signer: '',
  };
}

export interface NodeDeps {
  config: Config;
  reads: ChainReadModel;
  /** Full method names answered UNIMPLEMENTED (CHAIN_DISABLED_METHODS). */
  disabled: ReadonlySet<string>;
}

/** Registers the services; a disabled method is left out, so connect answers UNIMPLEMENTED. */
export function queryRoutes({ config, reads, disabled }: NodeDeps): (router: ConnectRouter) => void {
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
  };
  const token: ServiceImpl<typeof TokenQuery> = {
    async params() {
      return { params: { ixo1155ContractCode: BigInt(config.CHAIN_TOKEN_IXO1155_CONTRACT_CODE) } };
    },
  };

  const enabled = <T extends Record<string, unknown>>(service: { typeName: string; methods: { localName: string; name: string; parent: { typeName: string } }[] }, impl: T): Partial<T> =>
    Object.fromEntries(service.methods.filter((m) => !disabled.has(methodFullName(m))).map((m) => [m.localName, impl[m.localName]])) as Partial<T>;

  return (router) => {
    router.service(EntityQuery, enabled(EntityQuery, entity));
    router.service(IidQuery, enabled(IidQuery, iid));
    router.service(ClaimsQuery, enabled(ClaimsQuery, claims));
    router.service(TokenQuery, enabled(TokenQuery, token));
  };
}
