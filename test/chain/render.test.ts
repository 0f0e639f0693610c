// Cosmos JSON rendering, rule by rule, with a golden response per message type (hand-checked
// against the rules in ../shared/design/chain-gateway.md "JSON rendering").
import { create, fromBinary } from '@bufbuild/protobuf';
import { BinaryWriter } from '@bufbuild/protobuf/wire';
import { DurationSchema, TimestampSchema } from '@bufbuild/protobuf/wkt';
import { expect } from 'chai';
import { renderDuration, renderMessage, renderTimestamp } from '../../src/chain/gateway/render.ts';
import { legacyDecFromWire, legacyDecToWire } from '../../src/chain/legacy-dec.ts';
import { PageResponseSchema } from '../../generated/proto/cosmos/base/query/v1beta1/pagination_pb.ts';
import {
  CollectionState,
  EvaluationStatus,
  PaymentStatus,
  PaymentSchema,
  AdjudicationDidSchema,
} from '../../generated/proto/ixo/claims/v1beta1/claims_pb.ts';
import {
  QueryClaimResponseSchema,
  QueryCollectionResponseSchema,
  QueryParamsResponseSchema as ClaimsParamsResponseSchema,
} from '../../generated/proto/ixo/claims/v1beta1/query_pb.ts';
import { QueryEntityResponseSchema, QueryParamsResponseSchema as EntityParamsResponseSchema } from '../../generated/proto/ixo/entity/v1beta1/query_pb.ts';
import { QueryIidDocumentResponseSchema } from '../../generated/proto/ixo/iid/v1beta1/query_pb.ts';
import { QueryParamsResponseSchema as TokenParamsResponseSchema, QueryTokenDocResponseSchema } from '../../generated/proto/ixo/token/v1beta1/query_pb.ts';

const at = (iso: string, nanos = 0) => create(TimestampSchema, { seconds: BigInt(Date.parse(iso) / 1000), nanos });

describe('chain JSON rendering', () => {
  describe('rules', () => {
    it('uses proto field names as written (snake_case and camelCase alike)', () => {
      const out = renderMessage(EntityParamsResponseSchema, create(EntityParamsResponseSchema, { params: { nftContractAddress: 'a', createSequence: 1n } }));
      expect(Object.keys(out.params as object)).to.deep.equal(['nftContractAddress', 'nftContractMinter', 'createSequence']);
      const token = renderMessage(TokenParamsResponseSchema, create(TokenParamsResponseSchema, { params: {} }));
      expect(Object.keys(token.params as object)).to.deep.equal(['ixo1155_contract_code']);
    });

    it('emits every field: "" for strings, 0 for 32-bit, "0" for 64-bit, false, [] and null for unset (nullable) messages', () => {
      const out = renderMessage(QueryEntityResponseSchema, create(QueryEntityResponseSchema, { entity: {} }));
      expect(out.entity).to.deep.equal({
        id: '', type: '', start_date: null, end_date: null, status: 0, relayer_node: '', credentials: [], entity_verified: false, metadata: null, accounts: [],
      });
      const claim = renderMessage(QueryClaimResponseSchema, create(QueryClaimResponseSchema, { claim: {} })).claim as any;
      expect(claim.evaluation).to.equal(null);
      expect(claim.payments_status).to.equal(null);
    });

    it('renders an unset gogoproto nullable=false message as its zero value, never null', () => {
      // QueryEntityResponse.iidDocument is nullable=false upstream: a Go value, so an empty object.
      const out = renderMessage(QueryEntityResponseSchema, create(QueryEntityResponseSchema, {}));
      expect(out.iidDocument).to.deep.equal({
        context: [], id: '', controller: [], verificationMethod: [], service: [], authentication: [], assertionMethod: [], keyAgreement: [],
        capabilityInvocation: [], capabilityDelegation: [], linkedResource: [], linkedClaim: [], accordedRight: [], linkedEntity: [], alsoKnownAs: '', metadata: null,
      });
      expect((out.entity as any).id).to.equal('');
      // stdduration nullable=false: time.Duration(0) renders "0s"; a nullable Timestamp stays null.
      const payment = renderMessage(PaymentSchema, create(PaymentSchema, {}));
      expect(payment.timeout_ns).to.equal('0s');
      expect(payment.contract_1155_payment).to.equal(null);
      expect(renderMessage(ClaimsParamsResponseSchema, create(ClaimsParamsResponseSchema, {})).params).to.deep.equal({
        collection_sequence: '0', ixo_account: '', network_fee_percentage: '0.000000000000000000', node_fee_percentage: '0.000000000000000000', intent_sequence: '0',
      });
    });

    it('renders gogoproto customtype strings as their Cosmos type: LegacyDec with 18 places, Uint "0" when empty', () => {
      const doc = renderMessage(QueryTokenDocResponseSchema, create(QueryTokenDocResponseSchema, { tokenDoc: { name: 't', supply: '25', retired: [{ id: 'r' }] } })).tokenDoc as any;
      expect(doc.cap).to.equal('0');
      expect(doc.supply).to.equal('25');
      expect(doc.retired[0].amount).to.equal('0');
      const adjudicator = renderMessage(AdjudicationDidSchema, create(AdjudicationDidSchema, { did: 'did:x', rewardPercentage: '200000000000000000' }));
      expect(adjudicator).to.deep.equal({ did: 'did:x', reward_percentage: '0.200000000000000000' });
    });

    it('writes 64-bit integers as strings and 32-bit integers as numbers', () => {
      const out = renderMessage(TokenParamsResponseSchema, create(TokenParamsResponseSchema, { params: { ixo1155ContractCode: 18446744073709551615n } }));
      expect(out).to.deep.equal({ params: { ixo1155_contract_code: '18446744073709551615' } });
      const e = renderMessage(QueryEntityResponseSchema, create(QueryEntityResponseSchema, { entity: { status: -2 } }));
      expect((e.entity as any).status).to.equal(-2);
    });

    it('writes enums by name, the zero value included', () => {
      const out = renderMessage(QueryCollectionResponseSchema, create(QueryCollectionResponseSchema, { collection: { state: CollectionState.OPEN } }));
      expect((out.collection as any).state).to.equal('OPEN');
      const closed = renderMessage(QueryCollectionResponseSchema, create(QueryCollectionResponseSchema, { collection: { state: CollectionState.CLOSED } }));
      expect((closed.collection as any).state).to.equal('CLOSED');
    });

    it('writes an enum number the descriptor does not know as the number', () => {
      const out = renderMessage(QueryCollectionResponseSchema, create(QueryCollectionResponseSchema, { collection: { state: 9 as CollectionState } }));
      expect((out.collection as any).state).to.equal(9);
    });

    it('writes timestamps as RFC 3339 UTC with Z and 0, 3, 6 or 9 fraction digits', () => {
      expect(renderTimestamp(0n, 0)).to.equal('1970-01-01T00:00:00Z');
      expect(renderTimestamp(1700000000n, 500_000_000)).to.equal('2023-11-14T22:13:20.500Z');
      expect(renderTimestamp(1700000000n, 1_000)).to.equal('2023-11-14T22:13:20.000001Z');
      expect(renderTimestamp(1700000000n, 7)).to.equal('2023-11-14T22:13:20.000000007Z');
    });

    it('writes durations as seconds with an s suffix', () => {
      expect(renderDuration(3600n, 0)).to.equal('3600s');
      expect(renderDuration(1n, 500_000_000)).to.equal('1.500s');
      expect(renderDuration(-2n, 0)).to.equal('-2s');
      const payment = renderMessage(PaymentSchema, create(PaymentSchema, { account: 'ixo1acc', timeoutNs: create(DurationSchema, { seconds: 3600n }), amount: [{ denom: 'uixo', amount: '1000' }] }));
      expect(payment).to.deep.equal({
        account: 'ixo1acc', amount: [{ denom: 'uixo', amount: '1000' }], contract_1155_payment: null, timeout_ns: '3600s', cw20_payment: [], is_oracle_payment: false, cw1155_payment: [],
      });
    });

    it('writes bytes as base64 and empty bytes as null', () => {
      expect(renderMessage(PageResponseSchema, create(PageResponseSchema, { nextKey: new Uint8Array([0xfb, 0xff, 0x01]), total: 3n }))).to.deep.equal({ next_key: '+/8B', total: '3' });
      expect(renderMessage(PageResponseSchema, create(PageResponseSchema, {}))).to.deep.equal({ next_key: null, total: '0' });
    });

    it('writes LegacyDec fields with 18 decimal places', () => {
      expect(legacyDecFromWire('100000000000000000')).to.equal('0.100000000000000000');
      expect(legacyDecFromWire('1500000000000000000')).to.equal('1.500000000000000000');
      expect(legacyDecFromWire('0')).to.equal('0.000000000000000000');
      expect(legacyDecFromWire('')).to.equal('0.000000000000000000');
      expect(legacyDecFromWire('-5')).to.equal('-0.000000000000000005');
      expect(legacyDecToWire('0.1')).to.equal('100000000000000000');
      expect(legacyDecToWire('12.000000000000000001')).to.equal('12000000000000000001');
      expect(legacyDecToWire('0')).to.equal('0');
      expect(() => legacyDecToWire('1e5')).to.throw();
    });

    it('writes only the member of a oneof that is set', () => {
      const out = renderMessage(QueryIidDocumentResponseSchema, create(QueryIidDocumentResponseSchema, {
        iidDocument: { verificationMethod: [{ id: '#k1', type: 'Ed25519VerificationKey2020', controller: 'did:x', verificationMaterial: { case: 'publicKeyMultibase', value: 'z6Mk' } }] },
      }));
      expect((out.iidDocument as any).verificationMethod).to.deep.equal([{ id: '#k1', type: 'Ed25519VerificationKey2020', controller: 'did:x', publicKeyMultibase: 'z6Mk' }]);
    });
  });

  describe('golden responses', () => {
    it('QueryEntityResponse', () => {
      const msg = create(QueryEntityResponseSchema, {
        entity: {
          id: 'did:ixo:entity:abc',
          type: 'CleanCookingDevice',
          startDate: at('2024-03-01T08:00:00Z'),
          status: 1,
          credentials: ['KPTCredential:did:ixo:oracle'],
          entityVerified: true,
          metadata: { versionId: 'v1', created: at('2024-03-01T08:00:00Z'), updated: at('2024-03-02T09:30:00Z', 250_000_000) },
          accounts: [{ name: 'admin', address: 'ixo1xyz' }],
        },
        iidDocument: {
          context: [{ key: '@context', val: 'https://www.w3.org/ns/did/v1' }],
          id: 'did:ixo:entity:abc',
          controller: ['did:ixo:org'],
          service: [{ id: '#data', type: 'DataService', serviceEndpoint: 'https://data.example/abc' }],
          alsoKnownAs: 'stove-1',
          metadata: { versionId: 'v1', created: at('2024-03-01T08:00:00Z'), deactivated: false },
        },
      });
      expect(renderMessage(QueryEntityResponseSchema, msg)).to.deep.equal({
        entity: {
          id: 'did:ixo:entity:abc',
          type: 'CleanCookingDevice',
          start_date: '2024-03-01T08:00:00Z',
          end_date: null,
          status: 1,
          relayer_node: '',
          credentials: ['KPTCredential:did:ixo:oracle'],
          entity_verified: true,
          metadata: { version_id: 'v1', created: '2024-03-01T08:00:00Z', updated: '2024-03-02T09:30:00.250Z' },
          accounts: [{ name: 'admin', address: 'ixo1xyz' }],
        },
        iidDocument: {
          context: [{ key: '@context', val: 'https://www.w3.org/ns/did/v1' }],
          id: 'did:ixo:entity:abc',
          controller: ['did:ixo:org'],
          verificationMethod: [],
          service: [{ id: '#data', type: 'DataService', serviceEndpoint: 'https://data.example/abc' }],
          authentication: [],
          assertionMethod: [],
          keyAgreement: [],
          capabilityInvocation: [],
          capabilityDelegation: [],
          linkedResource: [],
          linkedClaim: [],
          accordedRight: [],
          linkedEntity: [],
          alsoKnownAs: 'stove-1',
          metadata: { versionId: 'v1', created: '2024-03-01T08:00:00Z', updated: null, deactivated: false },
        },
      });
    });

    it('QueryClaimResponse', () => {
      const msg = create(QueryClaimResponseSchema, {
        claim: {
          collectionId: '1',
          agentDid: 'did:ixo:household',
          submissionDate: at('2024-04-01T00:00:00Z'),
          claimId: 'claim-1',
          evaluation: { claimId: 'claim-1', collectionId: '1', oracle: 'did:ixo:oracle', status: EvaluationStatus.APPROVED, reason: 2, evaluationDate: at('2024-04-02T00:00:00Z'), amount: [{ denom: 'uixo', amount: '5' }] },
          paymentsStatus: { submission: PaymentStatus.PAID, approval: PaymentStatus.PROMISED },
          useIntent: true,
        },
      });
      expect(renderMessage(QueryClaimResponseSchema, msg)).to.deep.equal({
        claim: {
          collection_id: '1',
          agent_did: 'did:ixo:household',
          agent_address: '',
          submission_date: '2024-04-01T00:00:00Z',
          claim_id: 'claim-1',
          evaluation: {
            claim_id: 'claim-1',
            collection_id: '1',
            oracle: 'did:ixo:oracle',
            agent_did: '',
            agent_address: '',
            status: 'APPROVED',
            reason: 2,
            verification_proof: '',
            evaluation_date: '2024-04-02T00:00:00Z',
            amount: [{ denom: 'uixo', amount: '5' }],
            cw20_payment: [],
            cw1155_payment: [],
            cw1155_intent_payment: [],
          },
          payments_status: { submission: 'PAID', evaluation: 'NO_PAYMENT', approval: 'PROMISED', rejection: 'NO_PAYMENT' },
          use_intent: true,
          amount: [],
          cw20_payment: [],
          cw1155_payment: [],
          cw1155_intent_payment: [],
          member_address: '',
          evaluation_history: [],
        },
      });
    });

    it('QueryCollectionResponse', () => {
      const msg = create(QueryCollectionResponseSchema, {
        collection: { id: '1', entity: 'did:ixo:entity:p', admin: 'ixo1admin', protocol: 'did:ixo:entity:proto', startDate: at('2024-01-01T00:00:00Z'), quota: 100n, count: 3n, evaluated: 2n, approved: 1n, rejected: 1n, state: CollectionState.PAUSED },
      });
      expect(renderMessage(QueryCollectionResponseSchema, msg)).to.deep.equal({
        collection: {
          id: '1', entity: 'did:ixo:entity:p', admin: 'ixo1admin', protocol: 'did:ixo:entity:proto', start_date: '2024-01-01T00:00:00Z', end_date: null,
          quota: '100', count: '3', evaluated: '2', approved: '1', rejected: '1', disputed: '0', state: 'PAUSED', payments: null, signer: '',
          invalidated: '0', escrow_account: '', intents: 'ALLOW', flagged: '0', flagged_active: '0', service_agent_deposit_required: [], evaluator_deposit_required: [],
          dispute_deposit_amount: [], penalty_amount_per_dispute: [], disputes_open: '0', disputes_awarded: '0', disputes_dismissed: '0', min_deposit_period: '0s', adjudicators: [],
        },
      });
    });

    it('claims QueryParamsResponse', () => {
      const msg = create(ClaimsParamsResponseSchema, { params: { collectionSequence: 4n, ixoAccount: 'ixo1net', networkFeePercentage: '100000000000000000', nodeFeePercentage: '0', intentSequence: 1n } });
      expect(renderMessage(ClaimsParamsResponseSchema, msg)).to.deep.equal({
        params: { collection_sequence: '4', ixo_account: 'ixo1net', network_fee_percentage: '0.100000000000000000', node_fee_percentage: '0.000000000000000000', intent_sequence: '1' },
      });
    });

    it('token QueryParamsResponse', () => {
      const msg = create(TokenParamsResponseSchema, { params: { ixo1155ContractCode: 42n } });
      expect(renderMessage(TokenParamsResponseSchema, msg)).to.deep.equal({ params: { ixo1155_contract_code: '42' } });
    });

    it('token QueryTokenDocResponse from a v8 node, credits transferred (Token field 14, CreditsTransferred) included', () => {
      // The bytes as ixo-blockchain v8 writes them (proto/ixo/token/v1beta1/token.proto).
      const transferred = new BinaryWriter().uint32((1 << 3) | 2).string('c1').uint32((2 << 3) | 2).string('sold').uint32((3 << 3) | 2).string('KE');
      transferred.uint32((4 << 3) | 2).string('5').uint32((5 << 3) | 2).string('ixo1owner').uint32((6 << 3) | 2).string('auth1');
      const token = new BinaryWriter().uint32((4 << 3) | 2).string('carbon').uint32((14 << 3) | 2).bytes(transferred.finish());
      const wire = new BinaryWriter().uint32((1 << 3) | 2).bytes(token.finish()).finish();
      const doc = renderMessage(QueryTokenDocResponseSchema, fromBinary(QueryTokenDocResponseSchema, wire)).tokenDoc;
      expect(doc).to.deep.equal({
        minter: '', contract_address: '', class: '', name: 'carbon', description: '', image: '', type: '', cap: '0', supply: '0', paused: false, stopped: false,
        retired: [], cancelled: [],
        transferred: [{ id: 'c1', reason: 'sold', jurisdiction: 'KE', amount: '5', owner: 'ixo1owner', authorization_id: 'auth1' }],
      });
    });

    it('entity QueryParamsResponse', () => {
      const msg = create(EntityParamsResponseSchema, { params: { nftContractAddress: 'ixo1nft', nftContractMinter: 'ixo1minter', createSequence: 12n } });
      expect(renderMessage(EntityParamsResponseSchema, msg)).to.deep.equal({ params: { nftContractAddress: 'ixo1nft', nftContractMinter: 'ixo1minter', createSequence: '12' } });
    });
  });
});
