#!/usr/bin/env node
// Entry point of the `whale` CLI: registers tsx so the TypeScript sources run as they are.
require('tsx/cjs');
require('../cli/main.ts').main(process.argv);
