import { defineConfig } from '@hey-api/openapi-ts';

export default defineConfig({
  input: './generated/openapi.json',
  // `.js` in relative imports: the partner package (sdk/) is compiled from this output and must
  // load under Node's ESM resolution (NodeNext), where extensionless specifiers fail.
  output: { path: './generated/openapi', module: { extension: '.js' } },
  plugins: ['@hey-api/client-fetch', '@hey-api/typescript', '@hey-api/sdk'],
});
