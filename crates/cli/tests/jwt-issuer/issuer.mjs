// A JWT issuer for Strongroom's tests, on 127.0.0.1 only. Keys and tokens
// are made by the `jose` library (panva/jose). HTTPS with the certificate
// and key the test made (TLS_CERT, TLS_KEY); it prints `listening PORT`.
//
//   GET  /.well-known/openid-configuration  {issuer, jwks_uri}
//   GET  /jwks                              the published keys
//   GET  /hang                              never answers (a key source that hangs)
//   GET  /fetches                           {"jwks": N}: how many times /jwks was fetched
//   POST /mint {alg, claims, kid?, no_kid?} a token signed with the key of `alg`
//        alg "none": unsigned; alg "HS256-public": HMAC keyed with the RSA public key (PEM)
//   POST /publish {kid, published}          adds or removes a key from /jwks
//   POST /rotate {alg}                      a new key for alg, published, used from now on
import https from 'node:https';
import fs from 'node:fs';
import * as jose from 'jose';

const keys = new Map(); // kid -> {alg, privateKey, publicJwk, published}
const current = new Map(); // alg -> kid
let counter = 0;

async function addKey(alg, published = true) {
  const kid = `${alg.toLowerCase()}-${++counter}`;
  const opts = alg === 'EdDSA' ? { crv: 'Ed25519', extractable: true } : { extractable: true };
  const { publicKey, privateKey } = await jose.generateKeyPair(alg, opts);
  const publicJwk = { ...(await jose.exportJWK(publicKey)), kid, alg, use: 'sig' };
  const spki = await jose.exportSPKI(publicKey);
  keys.set(kid, { alg, privateKey, publicJwk, spki, published });
  current.set(alg, kid);
  return kid;
}

for (const alg of ['RS256', 'ES256', 'EdDSA', 'PS256']) await addKey(alg);

let jwksFetches = 0;
const b64 = (o) => Buffer.from(JSON.stringify(o)).toString('base64url');

async function mint({ alg, claims, kid, no_kid }) {
  if (alg === 'none') return `${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims)}.`;
  if (alg === 'HS256-public') {
    // Algorithm confusion: HMAC keyed with the issuer's public RSA key.
    const rs = keys.get(current.get('RS256'));
    const secret = new TextEncoder().encode(rs.spki);
    return new jose.SignJWT(claims).setProtectedHeader({ alg: 'HS256', kid: rs.publicJwk.kid }).sign(secret);
  }
  const k = keys.get(kid ?? current.get(alg));
  if (!k) throw new Error(`no key ${kid ?? alg}`);
  const header = no_kid ? { alg: k.alg } : { alg: k.alg, kid: k.publicJwk.kid };
  return new jose.SignJWT(claims).setProtectedHeader(header).sign(k.privateKey);
}

const body = (req) =>
  new Promise((resolve, reject) => {
    let data = '';
    req.on('data', (c) => (data += c));
    req.on('end', () => {
      try {
        resolve(data ? JSON.parse(data) : {});
      } catch (e) {
        reject(e);
      }
    });
  });

const server = https.createServer(
  { cert: fs.readFileSync(process.env.TLS_CERT), key: fs.readFileSync(process.env.TLS_KEY) },
  async (req, res) => {
    const send = (status, obj) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(obj));
    };
    const base = `https://127.0.0.1:${server.address().port}`;
    try {
      if (req.method === 'GET' && req.url === '/.well-known/openid-configuration') {
        return send(200, { issuer: base, jwks_uri: `${base}/jwks` });
      }
      if (req.method === 'GET' && req.url === '/jwks') {
        jwksFetches++;
        return send(200, { keys: [...keys.values()].filter((k) => k.published).map((k) => k.publicJwk) });
      }
      if (req.method === 'GET' && req.url === '/hang') return; // never answers
      if (req.method === 'GET' && req.url === '/fetches') return send(200, { jwks: jwksFetches });
      if (req.method === 'POST' && req.url === '/mint') return send(200, { token: await mint(await body(req)) });
      if (req.method === 'POST' && req.url === '/publish') {
        const { kid, published } = await body(req);
        const k = keys.get(kid);
        if (!k) return send(404, { error: 'no such key' });
        k.published = published;
        return send(200, { kid, published });
      }
      if (req.method === 'POST' && req.url === '/rotate') {
        const { alg } = await body(req);
        return send(200, { kid: await addKey(alg) });
      }
      if (req.method === 'GET' && req.url === '/keys') {
        return send(200, Object.fromEntries([...current.entries()]));
      }
      send(404, { error: 'not found' });
    } catch (e) {
      send(500, { error: String(e) });
    }
  },
);
server.listen(0, '127.0.0.1', () => console.log(`listening ${server.address().port}`));
