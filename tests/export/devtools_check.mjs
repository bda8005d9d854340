// devtools_check.mjs — loads .heapsnapshot files with Chrome DevTools' own
// loader (HeapSnapshotLoader + JSHeapSnapshot, bundled by bundle.mjs) in
// node and prints what DevTools computed, as JSON on stdout, for
// test_devtools.py to compare with heapgraph:
//   node devtools_check.mjs BUNDLE.mjs nodes SNAP     -> {"nodes":[[id,name,self,retained,idom_id,distance],...],
//                                                         "classes":{name:[count,self,retained]},
//                                                         "problems":[...], "node_count", "edge_count"}
//   node devtools_check.mjs BUNDLE.mjs diff BASE SNAP -> {"diff":{class:[added,removed,addedSize,removedSize]}}
//   node devtools_check.mjs BUNDLE.mjs time SNAP      -> {"load_s":..., "rss_mb":...}
// The two-thread initialisation DevTools does in two workers runs here on
// one MessageChannel in one thread (same code, same messages).
import fs from 'node:fs';
import {MessageChannel} from 'node:worker_threads';

if (!Promise.withResolvers) {  // node 20 lacks it; the loader needs it
  Promise.withResolvers = function() {
    let resolve, reject;
    const promise = new Promise((a, b) => { resolve = a; reject = b; });
    return {promise, resolve, reject};
  };
}

const [bundle, mode, ...files] = process.argv.slice(2);
const W = await import(new URL(bundle, 'file://' + process.cwd() + '/').href);
const problems = [];

async function load(file) {
  const dispatcher = {
    sendEvent(name, data) {
      if (name === 'HeapSnapshotProgressEvent.BrokenSnapshot') problems.push(String(data));
    },
  };
  const loader = new W.HeapSnapshotLoader.HeapSnapshotLoader(dispatcher);
  const fd = fs.openSync(file, 'r');
  const buf = Buffer.alloc(1 << 20);
  const dec = new TextDecoder();
  for (;;) {
    const n = fs.readSync(fd, buf, 0, buf.length, null);
    if (!n) break;
    loader.write(dec.decode(buf.subarray(0, n), {stream: true}));
  }
  fs.closeSync(fd);
  loader.close();
  const ch = new MessageChannel();
  new W.HeapSnapshot.SecondaryInitManager(ch.port2);
  const snap = await loader.buildSnapshot(ch.port1);
  ch.port1.close();
  return snap;
}

function nodesReport(s) {
  const out = [];
  const node = s.createNode(0);
  const dom = s.dominatorsTree, F = s.nodeFieldCount;
  for (let i = 0; i < s.nodeCount; i++) {
    node.nodeIndex = i * F;
    const d = s.createNode(dom[i] * F);
    out.push([node.id(), node.name(), node.selfSize(), node.retainedSize(), i === 0 ? 0 : d.id(),
              node.distance()]);
  }
  const classes = {};
  const ag = s.getAggregatesByClassKey(false, 'allObjects');
  for (const k in ag) classes[ag[k].name] = [ag[k].count, ag[k].self, ag[k].maxRet];
  return {node_count: s.nodeCount, nodes: out, classes, problems};
}

if (mode === 'nodes') {
  const s = await load(files[0]);
  process.stdout.write(JSON.stringify(nodesReport(s)) + '\n');
} else if (mode === 'diff') {
  const base = await load(files[0]);
  const s = await load(files[1]);
  const aggs = base.aggregatesForDiff(s.interfaceDefinitions());
  const diff = s.calculateSnapshotDiff(1, aggs);
  const res = {};
  for (const k in diff) {
    const d = diff[k];
    res[d.name] = [d.addedCount, d.removedCount, d.addedSize, d.removedSize];
  }
  process.stdout.write(JSON.stringify({diff: res, problems}) + '\n');
} else if (mode === 'time') {
  const t0 = process.hrtime.bigint();
  const s = await load(files[0]);
  const t1 = process.hrtime.bigint();
  process.stdout.write(JSON.stringify({load_s: Number(t1 - t0) / 1e9, nodes: s.nodeCount,
                                       rss_mb: process.memoryUsage().rss / 1048576,
                                       problems}) + '\n');
} else {
  console.error('usage: devtools_check.mjs BUNDLE nodes|diff|time FILE...');
  process.exit(2);
}
