// A test OpenID provider: node-oidc-provider with its development sign-in
// pages (any login name, any password), one confidential client, on
// 127.0.0.1. Arguments: PORT REDIRECT_URI CLIENT_ID CLIENT_SECRET.
// Everyone is in the group "sso-devs".
import Provider from 'oidc-provider';

const [port, redirectUri, clientId, clientSecret] = process.argv.slice(2);
const issuer = `http://127.0.0.1:${port}`;
const provider = new Provider(issuer, {
  clients: [{
    client_id: clientId,
    client_secret: clientSecret,
    redirect_uris: [redirectUri],
    grant_types: ['authorization_code'],
    response_types: ['code'],
  }],
  claims: { openid: ['sub'], profile: ['preferred_username', 'name', 'groups'] },
  conformIdTokenClaims: false,
  findAccount: async (_ctx, id) => ({
    accountId: id,
    claims: async () => ({ sub: id, preferred_username: id, name: id, groups: ['sso-devs'] }),
  }),
  features: { devInteractions: { enabled: true } },
  cookies: { keys: ['strongroom-test-only'] },
});
provider.listen(Number(port), '127.0.0.1', () => {
  console.log(`oidc-provider listening ${issuer}`);
});
