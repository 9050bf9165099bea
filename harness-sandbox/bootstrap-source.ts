// Trusted JavaScript that runs first in every fresh isolate context: removes WebAssembly,
// SharedArrayBuffer, Atomics (an isolate's memory limit does not cover wasm memory), WeakRef and
// FinalizationRegistry (garbage-collection timing is not deterministic), blocks every clock and entropy
// source (Math.random, Date.now, Date() and new Date() without arguments, Intl date formatting of "now"),
// removes RegExp's legacy static match properties (RegExp.$1 and friends carry the last match from one
// call to the next), then deep-freezes everything reachable from the global object and the global object
// itself, so no built-in can carry state between hook calls. Defines the two entry points the sandbox
// process calls:
//   __whaleLoad(factory)        runs the CommonJS module factory, returns "R"+manifest JSON or "E"+error JSON
//   __whaleInvoke(hook, json)   calls one hook on a JSON copy of its input, returns "R"+JSON or "E"+error JSON
// Values cross the boundary only as strings; every harness-controlled step (getters, toString, toJSON)
// runs inside the isolate, under its time and memory limits.

import { HOOK_NAMES } from '../agent/harness-contract';
import { HELPERS_MODULE_JS, RUNTIME_IMPORTS } from './helpers-source';

/** Largest hook result, in JSON characters: anything bigger is a bad return value, not a message. */
export const MAX_RESULT_JSON_CHARS = 1_000_000;

export const BOOTSTRAP_JS = `(function () {
  'use strict';
  var g = globalThis;
  delete g.WebAssembly; delete g.SharedArrayBuffer; delete g.Atomics; delete g.WeakRef; delete g.FinalizationRegistry;
  function nondeterministic(what) {
    return function () { throw new Error(what + ' is not available in a harness: hooks must be deterministic (pass what you need in through the input)'); };
  }
  Math.random = nondeterministic('Math.random');
  // Date: the current time is refused (Date(), new Date(), Date.now()); dates built from values work.
  var RealDate = Date, construct = Reflect.construct, defineProperty = Object.defineProperty;
  var SafeDate = function Date(value) {
    if (new.target === undefined) throw new Error('Date() is not available in a harness: hooks must be deterministic');
    if (arguments.length === 0) throw new Error('new Date() without arguments is not available in a harness: hooks must be deterministic');
    return construct(RealDate, arguments, new.target);
  };
  defineProperty(SafeDate, 'length', { value: 7 });
  SafeDate.prototype = RealDate.prototype;
  RealDate.prototype.constructor = SafeDate;
  SafeDate.UTC = RealDate.UTC;
  SafeDate.parse = RealDate.parse;
  SafeDate.now = nondeterministic('Date.now');
  g.Date = SafeDate;
  // Intl date formatting with no date formats "now".
  var dtfProto = Intl.DateTimeFormat.prototype;
  var formatGetter = Object.getOwnPropertyDescriptor(dtfProto, 'format').get;
  var formatToParts = dtfProto.formatToParts;
  defineProperty(dtfProto, 'format', { configurable: true, get: function () {
    var f = formatGetter.call(this);
    return function (date) {
      if (date === undefined) throw new Error('Intl.DateTimeFormat().format() without a date is not available in a harness: hooks must be deterministic');
      return f(date);
    };
  } });
  dtfProto.formatToParts = function (date) {
    if (date === undefined) throw new Error('Intl.DateTimeFormat().formatToParts() without a date is not available in a harness: hooks must be deterministic');
    return formatToParts.call(this, date);
  };
  ['input', '$_', 'lastMatch', '$&', 'lastParen', '$+', 'leftContext', '$\`', 'rightContext', "$'", '$1', '$2', '$3', '$4', '$5', '$6', '$7', '$8', '$9'].forEach(function (k) { delete RegExp[k]; });
  var stringify = JSON.stringify, parse = JSON.parse, hasOwn = Object.prototype.hasOwnProperty;
  var keys = Object.keys, freeze = Object.freeze, getProto = Object.getPrototypeOf, StringFn = String;
  var HOOKS = ${JSON.stringify(HOOK_NAMES)};
  var ALLOWED = ${JSON.stringify(RUNTIME_IMPORTS)};
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

  // Deep-freeze every object reachable from the global object (values, accessors, prototypes) and the
  // intrinsics reachable only from instances (iterator and generator prototypes): a built-in that can be
  // written to would carry state from one hook call to the next.
  var ownKeys = Reflect.ownKeys, getDesc = Object.getOwnPropertyDescriptor, seen = new WeakSet();
  function deepFreeze(root) {
    var stack = [root];
    while (stack.length > 0) {
      var o = stack.pop();
      if (o === null || (typeof o !== 'object' && typeof o !== 'function') || seen.has(o)) continue;
      seen.add(o);
      freeze(o);
      stack.push(getProto(o));
      var ks = ownKeys(o);
      for (var i = 0; i < ks.length; i++) {
        var d = getDesc(o, ks[i]);
        if (d === undefined) continue;
        if ('value' in d) stack.push(d.value);
        else { stack.push(d.get); stack.push(d.set); }
      }
    }
  }
  [function* () {}, async function () {}, async function* () {}, [][Symbol.iterator](), new Map().entries(), new Set().values(), ''[Symbol.iterator](), ''.matchAll(/a/g),
    new Intl.Segmenter().segment(''), new Intl.Segmenter().segment('')[Symbol.iterator](), requireShim, helpers].forEach(deepFreeze);
  deepFreeze(g);

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
