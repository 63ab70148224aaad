#!/usr/bin/env node
// The workspace's command: runs the CLI from its TypeScript sources (tsx compiles them on load), so a
// change to any package shows at once. The published package runs the built `dist/main.js` instead.
import { register } from 'tsx/esm/api';

register();
await import('../src/main.ts');
