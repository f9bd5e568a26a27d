// graphile-worker 0.18 on the same PostgreSQL and the same workload as benches/queue.rs, with
// the batching options its performance page documents (24 concurrent jobs, pool of 25, local
// queue of 500, completions and failures batched). Run by scripts/bench-queue-peer.
import { run, makeWorkerUtils, Logger } from "graphile-worker";
import pg from "pg";
import fs from "node:fs";

const connectionString = process.env.PG_URL;
const runs = Number(process.env.BENCH_RUNS ?? 3);
// BENCH_DEPTH=1000000 drains a million waiting jobs (the deep-queue case of scripts/bench-queue
// postgres scale); BENCH_QUEUE_ONLY=drain skips the latency figures.
const depth = Number(process.env.BENCH_DEPTH ?? 100000);
const label = depth >= 1000000 ? `${depth / 1000000}m` : `${depth / 1000}k`;
const quiet = new Logger(() => () => {});
const preset = {
  worker: {
    connectionString,
    concurrentJobs: 24,
    maxPoolSize: 25,
    localQueue: { size: 500 },
    completeJobBatchDelay: 0,
    failJobBatchDelay: 0,
  },
};

const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];
const pct = (sorted, p) => sorted[Math.round(p * (sorted.length - 1))];
const fmt = (v) => v.map((x) => x.toFixed(0)).join(", ");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// What a drain costs, as benches/queue.rs counts it: CPU of this process (the worker) and of
// every PostgreSQL process (from /proc, in clock ticks of 10 ms), and the WAL written.
const ticksMs = (stat) => {
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
};
const serverCpuMs = () =>
  fs.readdirSync("/proc").filter((p) => /^\d+$/.test(p)).reduce((sum, p) => {
    try {
      const stat = fs.readFileSync(`/proc/${p}/stat`, "utf8");
      return stat.includes(" (postgres) ") ? sum + ticksMs(stat) : sum;
    } catch {
      return sum;
    }
  }, 0);
const workerCpuMs = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };

const utils = await makeWorkerUtils({ connectionString, logger: quiet });
await utils.migrate();
const db = new pg.Pool({ connectionString, max: 2 });
const clear = () => db.query("TRUNCATE graphile_worker._private_jobs CASCADE");
const wal = async () =>
  Number((await db.query("SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::float8 AS b")).rows[0].b);
const open = async () =>
  Number((await db.query("SELECT count(*) FROM graphile_worker._private_jobs")).rows[0].count);

const enqueueRates = [];
const drainRates = [];
const costs = [];
for (let r = 0; r < runs; r++) {
  await clear();
  let started = performance.now();
  // One add_jobs call, as the performance page's "jobs queued per second" figure.
  // In calls of 100,000, as Bindery's bench enqueues.
  for (let done = 0; done < depth; done += 100000) {
    await db.query(
      `SELECT count(*) FROM graphile_worker.add_jobs((
         SELECT array_agg(row('noop', '{}'::json, null, null, null, null, null, null)::graphile_worker.job_spec)
         FROM generate_series(1, $1)))`,
      [Math.min(100000, depth - done)],
    );
  }
  enqueueRates.push(depth / ((performance.now() - started) / 1000));
  // As benches/queue.rs does (settle): what autovacuum and a checkpoint would have done by now.
  await db.query("VACUUM (ANALYZE) graphile_worker._private_jobs");
  await db.query("CHECKPOINT");

  let ran = 0;
  const walBefore = await wal();
  const cpuBefore = [workerCpuMs(), serverCpuMs()];
  started = performance.now();
  const runner = await run({
    preset,
    logger: quiet,
    noHandleSignals: true,
    taskList: { noop: async () => { ran++; } },
  });
  while (ran < depth) await sleep(5);
  while ((await open()) > 0) await sleep(2);
  drainRates.push(depth / ((performance.now() - started) / 1000));
  const per1000 = 1000 / depth;
  costs.push({
    worker: (workerCpuMs() - cpuBefore[0]) * per1000,
    server: (serverCpuMs() - cpuBefore[1]) * per1000,
    wal: ((await wal()) - walBefore) / 1024 * per1000,
  });
  await runner.stop();
}
console.log(`graphile-worker bulk_enqueue_${label}_jobs_per_s: median ${median(enqueueRates).toFixed(0)} (runs: ${fmt(enqueueRates)})`);
const cost = (key) => median(costs.map((c) => c[key])).toFixed(0);
console.log(`graphile-worker drain_${label}_noop_c24_jobs_per_s: median ${median(drainRates).toFixed(0)} (runs: ${fmt(drainRates)}); per 1,000 jobs: worker CPU ${cost("worker")} ms, PostgreSQL CPU ${cost("server")} ms, WAL ${cost("wal")} KiB (medians)`);

for (const queued of process.env.BENCH_QUEUE_ONLY === "drain" ? [] : [0, 10000]) {
  await clear();
  if (queued > 0) {
    await db.query(
      `SELECT count(*) FROM graphile_worker.add_jobs((
         SELECT array_agg(row('noop', '{}'::json, null, now() + interval '1 hour', null, null, null, null)::graphile_worker.job_spec)
         FROM generate_series(1, $1)))`,
      [queued],
    );
  }
  let resolveStart = null;
  const runner = await run({
    preset,
    logger: quiet,
    noHandleSignals: true,
    taskList: {
      noop: async () => {},
      ping: async () => { const t = performance.now(); resolveStart?.(t); resolveStart = null; },
    },
  });
  // The enqueuer has its own pool, as a web process would.
  const web = await makeWorkerUtils({ connectionString, logger: quiet });
  await sleep(500);
  const samples = [];
  for (let i = 0; i < 1000; i++) {
    const startedAt = new Promise((r) => { resolveStart = r; });
    const before = performance.now();
    await web.addJob("ping", {});
    samples.push((await startedAt) - before);
    await sleep(2);
  }
  await web.release();
  await runner.stop();
  samples.sort((a, b) => a - b);
  const label = queued > 0 ? `with_${queued}_queued` : "idle";
  console.log(`graphile-worker enqueue_to_start_ms_${label}: p50 ${pct(samples, 0.5).toFixed(2)}  p99 ${pct(samples, 0.99).toFixed(2)}  max ${samples[samples.length - 1].toFixed(2)}`);
}
await db.end();
await utils.release();
