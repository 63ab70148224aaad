/**
 * Child-process entry of the agent-loop benchmark's simulator (see `sim-host.ts`): llm-sim on a random
 * port serving the benchmark scenario (argument: its latency in ms), answering `take` with its request timings, CPU and busy share.
 */
import { startLlmSim } from '@agent-reach/llm-sim';
import { SimClock, type SimReply, type SimRequest } from './sim-host.js';
import { benchScenario } from './task.js';

const clock = new SimClock();
const sim = await startLlmSim({ scenarios: [] });
sim.addScenario(benchScenario(Number(process.argv[2] ?? 0)));
const reply = (m: SimReply) => process.send?.(m);
let cpu = process.cpuUsage();
let elu = performance.eventLoopUtilization();

process.on('message', (m: SimRequest) => {
  if (m.type === 'take') {
    sim.clearRequests();
    const used = process.cpuUsage(cpu);
    const busy = performance.eventLoopUtilization(elu).utilization;
    cpu = process.cpuUsage();
    elu = performance.eventLoopUtilization();
    reply({ type: 'taken', handled: clock.take(), cpuUs: used.user + used.system, busy });
  } else if (m.type === 'close') {
    process.disconnect();
  }
});
// Closing, or the parent going away (killed, crashed): no simulator is left behind either way.
process.on('disconnect', () => {
  clock.close();
  void sim.close().finally(() => process.exit(0));
});
reply({ type: 'ready', url: sim.url });
