#!/usr/bin/env node
'use strict';
// The `deskhand` command. Runs the compiled build in production when there is one
// (`npm run build`), and the TypeScript sources through tsx otherwise.
const fs = require('node:fs');
const path = require('node:path');

const compiled = path.join(__dirname, '..', 'dist', 'bin', 'main.js');
if (process.env.DESKHAND_ENV === 'production' && fs.existsSync(compiled)) {
  require(compiled);
} else {
  require('tsx/cjs');
  require('./main.ts');
}
