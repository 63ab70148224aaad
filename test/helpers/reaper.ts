// Part of the fault harness (packages/faults); the tests reuse it.
export { killOnExit, forget } from '@agent-reach/faults/processes';
