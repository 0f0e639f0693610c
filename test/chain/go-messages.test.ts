// CHAIN_GATEWAY_STYLE=v1 answers a parameter that does not parse as grpc-gateway v1.16 on a Cosmos
// node does: 400 {"code":3,"message":<Go's error text>,"details":[]}. Each expected text is what
// the Go code path named in the test returns (runtime/query.go, runtime/convert.go, the
// generated *.pb.gw.go handler, strconv, encoding/base64, net/url).
import { ScalarType } from '@bufbuild/protobuf';
import { expect } from 'chai';
import { parseGoScalar } from '../../src/chain/gateway/request.ts';
import { forEachDatabase } from '../helpers/databases.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const goError = (message: string) => ({ code: 3, message, details: [] });

forEachDatabase('chain gateway v1: Go error texts for parameters that do not parse', (t) => {
  let server: TestServer;
  const get = async (path: string) => {
    const res = await fetch(server.baseUrl + path);
    return { status: res.status, body: JSON.parse(await res.text()) as unknown };
  };
  const expectGoError = async (path: string, message: string) => {
    const res = await get(path);
    expect(res.status, path).to.equal(400);
    expect(res.body, path).to.deep.equal(goError(message));
  };

  before(async () => {
    server = await startTestServer(t.db);
  });
  after(async () => {
    await server?.stop();
  });

  it('an integer: strconv.ParseUint with base 0, its NumError text', async () => {
    await expectGoError('/chain/claims/claims?pagination.limit=abc', 'strconv.ParseUint: parsing "abc": invalid syntax');
    await expectGoError('/chain/claims/claims?pagination.limit=1__0', 'strconv.ParseUint: parsing "1__0": invalid syntax');
  });

  it('an integer out of range: the overflow is reported where it happens, before a later bad digit', async () => {
    await expectGoError('/chain/claims/claims?pagination.offset=18446744073709551616', 'strconv.ParseUint: parsing "18446744073709551616": value out of range');
    await expectGoError('/chain/claims/claims?pagination.offset=99999999999999999999x', 'strconv.ParseUint: parsing "99999999999999999999x": value out of range');
  });

  it('quotes the input as strconv.Quote does: escapes, \\x for bad UTF-8 and controls, \\u / \\U for non-printable runes', async () => {
    // Hearth refuses a NUL in a query before the gateway; %01 stands for the control characters.
    const input = ['a', '%22', '%5C', '%0A', '%09', '%01', '%7F', '%C3%A9', '%C2%A0', '%F0%9F%98%80', '%EF%BB%BF', '%F4%8F%BF%BF', '%ED%A0%80', '%FF'].join('');
    await expectGoError(`/chain/claims/claims?pagination.limit=${input}`, 'strconv.ParseUint: parsing "a\\"\\\\\\n\\t\\x01\\x7fé\\u00a0😀\\ufeff\\U0010ffff\\xed\\xa0\\x80\\xff": invalid syntax');
  });

  it('a boolean: strconv.ParseBool', async () => {
    await expectGoError('/chain/claims/claims?pagination.count_total=yes', 'strconv.ParseBool: parsing "yes": invalid syntax');
    await expectGoError('/chain/claims/claims?pagination.reverse', 'strconv.ParseBool: parsing "": invalid syntax');
  });

  it("bytes: runtime.Bytes reports URLEncoding's error (tried after StdEncoding) at the byte Go's decoder stops", async () => {
    // StdEncoding stops at "-" (byte 4); URLEncoding reads "AAAA-_8=" and stops at the trailing "x".
    await expectGoError('/chain/claims/claims?pagination.key=AAAA-_8%3Dx', 'illegal base64 data at input byte 8');
    await expectGoError('/chain/claims/claims?pagination.key=AB%3D', 'illegal base64 data at input byte 3');
    await expectGoError('/chain/claims/claims?pagination.key=AB%3Dx', 'illegal base64 data at input byte 2');
    await expectGoError('/chain/claims/claims?pagination.key=AAAAA', 'illegal base64 data at input byte 4');
  });

  it('an enum path variable: "type mismatch, parameter: <variable>, error: <runtime.Enum error>"', async () => {
    await expectGoError('/chain/claims/dispute-by-subject/s1/9', 'type mismatch, parameter: targetRole, error: 9 is not valid');
    await expectGoError('/chain/claims/dispute-by-subject/s1/EVALUATOR', 'type mismatch, parameter: targetRole, error: EVALUATOR is not valid');
  });

  it('path variables are read before the query is parsed', async () => {
    await expectGoError('/chain/claims/dispute-by-subject/s1/9?a=%zz', 'type mismatch, parameter: targetRole, error: 9 is not valid');
  });

  it('a parameter naming a message field: populateField has no conversion for the Go type', async () => {
    await expectGoError('/chain/claims/claims?pagination=1', 'field type *query.PageRequest is not supported in query parameters');
  });

  it('a parameter going past a scalar (nested field) or past bytes (repeated field)', async () => {
    await expectGoError('/chain/claims/claims?pagination.limit.x.y=1', 'unexpected nested field x in pagination.limit');
    await expectGoError('/chain/claims/claims?pagination.countTotal.x=1', 'unexpected nested field x in pagination.countTotal');
    await expectGoError('/chain/claims/claims?pagination.key.x=1', 'unexpected repeated field in pagination.key.x');
  });

  it('with several bad parameters, the first in the query (Go: map order, not fixed)', async () => {
    await expectGoError('/chain/claims/claims?pagination.limit=x&pagination.offset=y', 'strconv.ParseUint: parsing "x": invalid syntax');
    await expectGoError('/chain/claims/claims?pagination.offset=y&pagination.limit=x', 'strconv.ParseUint: parsing "y": invalid syntax');
  });

  it('reads the first value of every parameter name, even when another name sets the same field', async () => {
    await expectGoError('/chain/claims/claims?pagination.countTotal=true&pagination.count_total=x', 'strconv.ParseBool: parsing "x": invalid syntax');
  });

  it('reads name[k]=v as name with the values k, v (query.go valuesKeyRegexp)', async () => {
    await expectGoError('/chain/claims/claims?pagination.limit[x]=1', 'strconv.ParseUint: parsing "x": invalid syntax');
  });

  it("quotes a bad escape as url.ParseQuery does: from the key's or value's own text, at most 3 bytes", async () => {
    await expectGoError('/chain/claims/claims?pagination.limit=%4&a=1', 'invalid URL escape "%4"');
    await expectGoError('/chain/claims/claims?a%3=1', 'invalid URL escape "%3"');
  });

  it('reads no query where the path binds every field of the request (the handler has no query parameters)', async () => {
    expect((await get('/chain/token/params?x=%zz')).status).to.equal(200);
    expect((await get('/chain/entity/did:ixo:entity:nope?pagination.limit=abc;')).body).to.deep.equal({ code: 5, message: 'entity did:ixo:entity:nope not found', details: [] });
  });

  it('parses the form of a POST the mux reroutes before any handler, even one that reads no query', async () => {
    const post = (path: string, headers: Record<string, string>, body: string) =>
      fetch(server.baseUrl + path, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body }).then(async (res) => ({ status: res.status, body: JSON.parse(await res.text()) as unknown }));
    expect(await post('/chain/token/params', {}, 'x=%zz')).to.deep.equal({ status: 400, body: goError('invalid URL escape "%zz"') });
    expect(await post('/chain/token/params', {}, 'x=1')).to.have.property('status', 200);
    // X-HTTP-Method-Override: parsed before the route is looked up (an unknown one included).
    expect(await post('/chain/nope?x=%zz', { 'x-http-method-override': 'GET' }, '')).to.deep.equal({ status: 400, body: goError('invalid URL escape "%zz"') });
  });
});

describe('chain gateway v1: Go error texts for scalar kinds no query proto has yet', () => {
  const message = (type: ScalarType, raw: string) => {
    try {
      return String(parseGoScalar(type, raw));
    } catch (err) {
      return (err as Error).message;
    }
  };

  it('signed integers: strconv.ParseInt with the sign in the quoted input, bit size 32 or 64', () => {
    expect(message(ScalarType.INT64, '-')).to.equal('strconv.ParseInt: parsing "-": invalid syntax');
    expect(message(ScalarType.INT32, '-0x80000001')).to.equal('strconv.ParseInt: parsing "-0x80000001": value out of range');
    expect(message(ScalarType.UINT32, '0x100000000')).to.equal('strconv.ParseUint: parsing "0x100000000": value out of range');
  });

  it('floats: strconv.ParseFloat, Go syntax (a hex float needs its p exponent), out of range on overflow', () => {
    expect(message(ScalarType.DOUBLE, 'x')).to.equal('strconv.ParseFloat: parsing "x": invalid syntax');
    expect(message(ScalarType.DOUBLE, '0x10')).to.equal('strconv.ParseFloat: parsing "0x10": invalid syntax');
    expect(message(ScalarType.DOUBLE, '1e400')).to.equal('strconv.ParseFloat: parsing "1e400": value out of range');
    expect(message(ScalarType.FLOAT, '1e39')).to.equal('strconv.ParseFloat: parsing "1e39": value out of range');
    expect(message(ScalarType.DOUBLE, '1_000.5')).to.equal('1000.5');
    expect(message(ScalarType.DOUBLE, '0x1p-2')).to.equal('0.25');
  });
});
