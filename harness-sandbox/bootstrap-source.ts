// Trusted JavaScript that runs first in every fresh isolate context: removes WebAssembly,
// SharedArrayBuffer and Atomics (an isolate's memory limit does not cover wasm memory), disables the
// non-deterministic Math.random / Date.now, freezes the intrinsics (so a harness cannot tamper with
// prototypes between calls), and defines the two entry points the sandbox process calls:
//   __whaleLoad(factory)        runs the CommonJS module factory, returns "R"+manifest JSON or "E"+error JSON
//   __whaleInvoke(hook, json)   calls one hook on a JSON copy of its input, returns "R"+JSON or "E"+error JSON
// Values cross the boundary only as strings; every harness-controlled step (getters, toString, toJSON)
// runs inside the isolate, under its time and memory limits.

import { HOOK_NAMES } from '../agent/harness-contract';
import { ALLOWED_IMPORTS } from './compile';
import { HELPERS_MODULE_JS } from './helpers-source';

/** Largest hook result, in JSON characters: anything bigger is a bad return value, not a message. */
export const MAX_RESULT_JSON_CHARS = 1_000_000;

export const BOOTSTRAP_JS = `(function () {
  'use strict';
  var g = globalThis;
  delete g.WebAssembly; delete g.SharedArrayBuffer; delete g.Atomics;
  Math.random = function () { throw new Error('Math.random is not available in a harness: hooks must be deterministic'); };
  Date.now = function () { throw new Error('Date.now is not available in a harness: hooks must be deterministic'); };
  var stringify = JSON.stringify, parse = JSON.parse, hasOwn = Object.prototype.hasOwnProperty;
  var keys = Object.keys, freeze = Object.freeze, getProto = Object.getPrototypeOf, StringFn = String;
  var HOOKS = ${JSON.stringify(HOOK_NAMES)};
  var ALLOWED = ${JSON.stringify(ALLOWED_IMPORTS)};
  var helpers = ${HELPERS_MODULE_JS};
  var hooks = null;
  var MAX = ${MAX_RESULT_JSON_CHARS};

  function requireShim(name) {
    if (name === 'whale:helpers') return helpers;
    throw new Error('require("' + StringFn(name).slice(0, 100) + '") is not allowed in a harness; allowed: ' + ALLOWED.join(', '));
  }
  function describe(e) {
    try {
      if (e instanceof Error) {
        var stack = typeof e.stack === 'string' ? e.stack.split('\\n').slice(1, 3).join(' | ') : '';
        return (StringFn(e.name) + ': ' + StringFn(e.message)).slice(0, 600) + (stack ? ' (' + stack.slice(0, 300) + ')' : '');
      }
      var t = e === null ? 'null' : typeof e;
      var text = t === 'object' || t === 'function' ? '' : ' ' + StringFn(e).slice(0, 200);
      return 'threw a non-Error value (' + t + ')' + text;
    } catch (inner) {
      return 'threw a value that cannot be described';
    }
  }
  function replacer(key, value) {
    var t = typeof value;
    if (t === 'function') throw new TypeError('a function is not plain data (at "' + key + '")');
    if (t === 'symbol' || t === 'bigint') throw new TypeError('a ' + t + ' is not plain data (at "' + key + '")');
    return value;
  }
  function fail(kind, message) { return 'E' + stringify({ kind: kind, message: message }); }

  // Freeze every intrinsic reachable from the global object, and its prototype.
  var names = Object.getOwnPropertyNames(g);
  for (var i = 0; i < names.length; i++) {
    var v = g[names[i]];
    if (v !== null && (typeof v === 'object' || typeof v === 'function')) {
      freeze(v);
      if (typeof v === 'function' && v.prototype) freeze(v.prototype);
    }
  }
  [function () {}, function* () {}, async function () {}, [][Symbol.iterator](), new Map().entries(), ''[Symbol.iterator]()].forEach(function (x) {
    for (var p = getProto(x); p !== null; p = getProto(p)) freeze(p);
  });

  var load = function (factory) {
    try {
      var module = { exports: {} };
      factory.call(undefined, module.exports, requireShim, module);
      var exp = module.exports;
      var h = exp !== null && typeof exp === 'object' ? (hasOwn.call(exp, 'default') ? exp.default : exp.harness) : undefined;
      if (h === null || typeof h !== 'object') return fail('contract-violation', 'the module must \`export default\` a harness object (see docs/writing-a-harness.md)');
      var config = {}, found = [], issues = [], table = {};
      var ks = keys(h);
      for (var j = 0; j < ks.length; j++) if (ks[j] !== 'hooks') config[ks[j]] = h[ks[j]];
      var hk = h.hooks;
      if (hk === undefined) hk = {};
      if (hk === null || typeof hk !== 'object') issues.push({ where: 'hooks', message: 'hooks must be an object of functions' });
      else {
        var hks = keys(hk);
        for (var k = 0; k < hks.length; k++) {
          var name = hks[k], fn = hk[name];
          if (HOOKS.indexOf(name) < 0) issues.push({ where: 'hooks.' + name, message: 'unknown hook; hooks are: ' + HOOKS.join(', ') });
          else if (typeof fn !== 'function') issues.push({ where: 'hooks.' + name, message: 'must be a function' });
          else if (fn.constructor && (fn.constructor.name === 'AsyncFunction' || fn.constructor.name === 'GeneratorFunction')) issues.push({ where: 'hooks.' + name, message: 'must be a plain synchronous function (not async, not a generator)' });
          else { table[name] = fn; found.push(name); }
        }
      }
      hooks = table;
      var s = stringify({ config: config, hooks: found, issues: issues }, replacer);
      return 'R' + s;
    } catch (e) {
      return fail('runtime-error', 'loading the module failed: ' + describe(e));
    }
  };
  var invoke = function (hook, inputJson) {
    if (hooks === null || !hasOwn.call(hooks, hook)) return fail('contract-violation', 'hook ' + hook + ' is not defined');
    var input = parse(inputJson), result;
    try {
      result = hooks[hook].call(undefined, input);
    } catch (e) {
      return fail('runtime-error', describe(e));
    }
    try {
      if (result !== null && (typeof result === 'object' || typeof result === 'function') && typeof result.then === 'function') {
        return fail('bad-return-value', 'returned a Promise (or thenable): hooks must be synchronous and return plain data');
      }
      var s = stringify(result, replacer);
      if (s === undefined) return fail('bad-return-value', 'returned undefined (or a function): hooks must return a plain object');
      if (s.length > MAX) return fail('bad-return-value', 'returned ' + s.length + ' characters of JSON; the limit is ' + MAX);
      return 'R' + s;
    } catch (e) {
      return fail('bad-return-value', 'the return value is not plain JSON data: ' + describe(e));
    }
  };
  return [load, invoke];
})()`;
