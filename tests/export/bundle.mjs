// bundle.mjs — bundles Chrome DevTools' own heap snapshot loader
// (front_end/entrypoints/heap_snapshot_worker from the npm package
// chrome-devtools-frontend, installed by scripts/deps.sh into .deps/devtools)
// with esbuild into one ES module that devtools_check.mjs imports in node.
// The package ships TypeScript sources without the generated
// core/i18n/locales.js: a stub module stands in for it (the loader never
// formats localised UI strings that matter here).
//   node bundle.mjs DEPS_DIR OUT.mjs
import {createRequire} from 'node:module';
import path from 'node:path';

const [depsDir, out] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(depsDir), 'package.json'));
const esbuild = require('esbuild');
const front = path.join(path.resolve(depsDir), 'node_modules/chrome-devtools-frontend/front_end');

const stubLocales = {
  name: 'stub-locales',
  setup(build) {
    build.onResolve({filter: /\/locales\.js$/}, () => ({path: 'locales', namespace: 'stub'}));
    build.onLoad({filter: /.*/, namespace: 'stub'}, () => ({
      contents: 'export const LOCALES=["en-US"];export const BUNDLED_LOCALES=["en-US"];' +
          'export const DEFAULT_LOCALE="en-US";export const REMOTE_FETCH_PATTERN="";' +
          'export const LOCAL_FETCH_PATTERN="";',
      loader: 'js',
    }));
  },
};

await esbuild.build({
  entryPoints: [path.join(front, 'entrypoints/heap_snapshot_worker/heap_snapshot_worker.ts')],
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node18',
  outfile: out,
  logLevel: 'error',
  plugins: [stubLocales],
});
