// The query services this codebase compiles in. The node implements them and the gateway reads
// their google.api.http annotations; nothing else lists methods or paths.
import type { DescService } from '@bufbuild/protobuf';
import { invalidConfig, type Config } from '../config.ts';
import { Query as ClaimsQuery } from '../../generated/proto/ixo/claims/v1beta1/query_pb.ts';
import { Query as EntityQuery } from '../../generated/proto/ixo/entity/v1beta1/query_pb.ts';
import { Query as IidQuery } from '../../generated/proto/ixo/iid/v1beta1/query_pb.ts';
import { Query as TokenQuery } from '../../generated/proto/ixo/token/v1beta1/query_pb.ts';

export { ClaimsQuery, EntityQuery, IidQuery, TokenQuery };

/** The edge the gateway answers with (CHAIN_GATEWAY_STYLE): grpc-gateway v1 on a Cosmos node, or v2. */
export type GatewayStyle = Config['CHAIN_GATEWAY_STYLE'];

export const QUERY_SERVICES: readonly DescService[] = [EntityQuery, IidQuery, ClaimsQuery, TokenQuery];

/** "ixo.claims.v1beta1.Query.ClaimList", the form CHAIN_DISABLED_METHODS uses. */
export const methodFullName = (m: { parent: { typeName: string }; name: string }) => `${m.parent.typeName}.${m.name}`;

/** Checks CHAIN_DISABLED_METHODS against the compiled-in methods, so a typo stops start-up. */
export function disabledMethodSet(names: readonly string[]): Set<string> {
  const known = new Set(QUERY_SERVICES.flatMap((s) => s.methods.map(methodFullName)));
  const unknown = names.filter((n) => !known.has(n));
  if (unknown.length) {
    throw invalidConfig('CHAIN_DISABLED_METHODS', `names unknown methods: ${unknown.join(', ')} (known: ${[...known].join(', ')})`);
  }
  return new Set(names);
}
