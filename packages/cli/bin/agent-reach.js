#!/usr/bin/env node
// Runs the TypeScript CLI directly: the workspace ships sources, tsx compiles them on load.
import { register } from 'tsx/esm/api';

register();
await import('../src/main.ts');
