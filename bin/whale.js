#!/usr/bin/env node
// Entry point of the `whale` CLI: registers tsx so the TypeScript sources run as they are.
const Module = require('node:module');
const path = require('node:path');
const { readFileSync } = require('node:fs');

const nodeJs = Module._extensions['.js'];
require('tsx/cjs');
const tsxJs = Module._extensions['.js'];

// tsx scans every .js and .cjs file that mentions `import` or `export` for ES module syntax and dynamic imports,
// to compile them to CommonJS; for the dependencies (the Temporal SDK's generated protobuf code, zod) that scan
// costs about as much as loading them. A dependency's .cjs file, and its .js file in a CommonJS package, goes to
// Node's own loader instead, which compiles it as CommonJS (and, should a .js file hold ES module syntax after
// all, loads it as an ES module itself); other files of ES module packages ("type": "module") and the project's
// own files still go through tsx.
const NODE_MODULES = `${path.sep}node_modules${path.sep}`;
const packageTypes = new Map();
/** The "type" of the package.json nearest above `dir` (Node's rule), cached per folder. */
function packageType(dir) {
  let type = packageTypes.get(dir);
  if (type !== undefined) return type;
  try {
    type = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')).type ?? 'commonjs';
  } catch (err) {
    const parent = path.dirname(dir);
    type = err.code === 'ENOENT' && parent !== dir ? packageType(parent) : 'commonjs';
  }
  packageTypes.set(dir, type);
  return type;
}
Module._extensions['.js'] = function (module, filename) {
  if (filename.includes(NODE_MODULES) && (filename.endsWith('.cjs') || (filename.endsWith('.js') && packageType(path.dirname(filename)) !== 'module'))) return nodeJs.call(this, module, filename);
  return tsxJs.call(this, module, filename);
};

require('../cli/main.ts').main(process.argv);
