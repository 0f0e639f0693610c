// The pieces of the grpc-gateway v1 edge checked against independent vectors: Go's strconv
// (integers in query parameters) and Go's path.Clean as gorilla/mux applies it (redirects).
import { readFileSync } from 'node:fs';
import { ScalarType } from '@bufbuild/protobuf';
import { expect } from 'chai';
import { buildRequest, parseGoScalar, parseScalar } from '../../src/chain/gateway/request.ts';
import { DisputeTargetRole } from '../../generated/proto/ixo/claims/v1beta1/claims_pb.ts';
import { QueryDisputeBySubjectRequestSchema } from '../../generated/proto/ixo/claims/v1beta1/query_pb.ts';
import { cleanPath, decodeTargetPath, goEscapedPath } from '../../src/platform/http/request-target.ts';

const vectors = JSON.parse(readFileSync(new URL('./vectors/go-strconv-base0.json', import.meta.url), 'utf8')) as Record<string, { in: string; out: string | null }[]>;

function parsed(type: ScalarType, input: string): string | null {
  try {
    return String(parseGoScalar(type, input));
  } catch {
    return null;
  }
}

describe('chain gateway v1 edge', () => {
  describe('integers as Go strconv.ParseUint / ParseInt with base 0 (Go test vectors)', () => {
    for (const [table, type] of [['ParseUint64Base0', ScalarType.UINT64], ['ParseInt64Base0', ScalarType.INT64]] as const) {
      it(`agrees with Go on every row of ${table}`, () => {
        const disagreements = vectors[table]!.filter((v) => parsed(type, v.in) !== v.out).map((v) => `${JSON.stringify(v.in)}: got ${parsed(type, v.in)}, Go ${v.out}`);
        expect(disagreements).to.deep.equal([]);
      });
    }

    it('checks the range of 32-bit fields as ParseInt/ParseUint with bitSize 32 do', () => {
      expect(parsed(ScalarType.UINT32, '0xFFFFFFFF')).to.equal('4294967295');
      expect(parsed(ScalarType.UINT32, '0x100000000')).to.equal(null);
      expect(parsed(ScalarType.INT32, '-0x80000000')).to.equal('-2147483648');
      expect(parsed(ScalarType.INT32, '0x80000000')).to.equal(null);
    });

    it('reads an enum number as grpc-gateway v1 does: base 0 in a path variable, decimal (Atoi) in a query parameter', () => {
      const role = (vars: Record<string, string>, query: string) => buildRequest(QueryDisputeBySubjectRequestSchema, vars, query, 'v1').targetRole;
      expect(role({ targetRole: '0x2' }, '')).to.equal(DisputeTargetRole.EVALUATOR);
      expect(role({}, 'targetRole=2')).to.equal(DisputeTargetRole.EVALUATOR);
      expect(role({}, 'targetRole=%2B1')).to.equal(DisputeTargetRole.SUBMITTER);
      expect(() => role({}, 'targetRole=0x2')).to.throw('0x2 is not a valid types.DisputeTargetRole');
    });

    it('keeps plain decimal integers in the v2 dialect', () => {
      expect(parseScalar(ScalarType.UINT64, '10')).to.equal(10n);
      expect(() => parseScalar(ScalarType.UINT64, '0x10')).to.throw('must be an integer');
    });
  });

  describe('path cleaning as gorilla/mux cleanPath (Go path.Clean, trailing slash kept)', () => {
    // Rows of Go's path_test.go cleantests, made rooted as request paths always are.
    const rows: [string, string][] = [
      ['/', '/'],
      ['/abc', '/abc'],
      ['/a/b/c', '/a/b/c'],
      ['/abc/', '/abc/'],
      ['/a/b/c/', '/a/b/c/'],
      ['//abc', '/abc'],
      ['///abc', '/abc'],
      ['//abc//', '/abc/'],
      ['/abc//def//ghi', '/abc/def/ghi'],
      ['/./', '/'],
      ['/abc/./def', '/abc/def'],
      ['/./abc/def', '/abc/def'],
      ['/abc/.', '/abc'],
      ['/abc/def/ghi/../jkl', '/abc/def/jkl'],
      ['/abc/def/../ghi/../jkl', '/abc/jkl'],
      ['/abc/def/..', '/abc'],
      ['/abc/def/../..', '/'],
      ['/abc/def/../../..', '/'],
      ['/abc/def/../../../ghi/jkl/../../../mno', '/mno'],
      ['/../abc', '/abc'],
      ['/abc/./../def', '/def'],
      ['/abc//./../def', '/def'],
      ['/abc/../../././../def', '/def'],
    ];
    for (const [input, output] of rows) {
      it(`${input} -> ${output}`, () => expect(cleanPath(input)).to.equal(output));
    }
  });

  it('decodes the path as Go URL.Path (%2F included) and refuses bad escapes', () => {
    expect(decodeTargetPath('/chain%2Fentity%2Fdid%3Aixo%3Aa')).to.equal('/chain/entity/did:ixo:a');
    expect(decodeTargetPath('/chain/a+b')).to.equal('/chain/a+b');
    expect(decodeTargetPath('/chain/%zz')).to.equal(undefined);
    expect(decodeTargetPath('/chain/%4')).to.equal(undefined);
  });

  it('escapes a path for the Location as Go does (url.URL.EscapedPath)', () => {
    expect(goEscapedPath('/chain/entity/did:ixo:a b')).to.equal('/chain/entity/did:ixo:a%20b');
    expect(goEscapedPath("/chain/é!'()*?#")).to.equal('/chain/%C3%A9%21%27%28%29%2A%3F%23');
    expect(goEscapedPath('/chain/$&+,;=@~')).to.equal('/chain/$&+,;=@~');
  });
});
