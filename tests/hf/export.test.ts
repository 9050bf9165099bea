// `whale export --format hf` and `whale import` with the committed math base policy: transformers (Python)
// loads the folder, its tokenizer and chat template give the project's token ids, its logits equal the
// project's (max |diff| <= 1e-4), and importing the folder gives back the identical weights.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import * as ort from 'onnxruntime-node';
import { decodeCheckpoint, renderChatPrompt, type ChatMessage } from '../../model';
import { buildTrainGraph } from '../../model/graph/training-graph';
import { importHfFolder } from '../../model/checkpoints/hf-folder';
import { ROOT } from '../workflows/env';
import { HF_PYTHON, hfSkipReason, run } from './hf-env';

const MATH = path.join(ROOT, 'data', 'base-policies', 'math.ckpt');
const WHALE = path.join(ROOT, 'bin', 'whale.js');
const skip = hfSkipReason();
let dir: string;

const CONVERSATIONS: ChatMessage[][] = [
  [{ role: 'user', content: 'What is 17 + 25?' }],
  [{ role: 'system', content: 'Answer with <answer>.' }, { role: 'user', content: 'Wie viel ist 3×4? ü' }],
  [{ role: 'user', content: 'What is 6 * 7?' }, { role: 'assistant', content: '<calc>6*7</calc>' }, { role: 'tool', content: '42' }],
];

// Reads the folder with transformers and prints, per conversation, the tokenizer's ids for the rendered text,
// the chat template's ids, the decoded text, and the logits at every position.
const PY = `
import json, sys, torch
from transformers import AutoModelForCausalLM, AutoTokenizer
folder, convs = sys.argv[1], json.loads(sys.stdin.read())
tok = AutoTokenizer.from_pretrained(folder)
model = AutoModelForCausalLM.from_pretrained(folder).eval()
out = []
for msgs in convs:
    templ = tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=True)
    templ = list(templ["input_ids"] if hasattr(templ, "keys") else templ)
    with torch.no_grad():
        logits = model(torch.tensor([templ])).logits[0]
    out.append({"template_ids": templ, "decoded": tok.decode(templ), "text_ids": tok(tok.decode(templ))["input_ids"], "logits": logits.tolist(),
                "arch": type(model).__name__})
print(json.dumps(out))
`;

async function projectLogits(params: Float32Array, config: ReturnType<typeof decodeCheckpoint>['config'], ids: number[]): Promise<Float32Array> {
  const T = ids.length;
  const s = await ort.InferenceSession.create(buildTrainGraph(config, { rows: 1, seqLen: T, mode: 'loss', emitLogits: true }));
  try {
    const r = await s.run({ params: new ort.Tensor('float32', params, [params.length]), tokens: new ort.Tensor('int32', Int32Array.from(ids), [1, T]), targets: new ort.Tensor('int32', new Int32Array(T), [1, T]), weights: new ort.Tensor('float32', new Float32Array(T), [1, T]) });
    return r.logits.data as Float32Array;
  } finally {
    await s.release();
  }
}

before(() => {
  if (!skip) dir = mkdtempSync(path.join(tmpdir(), 'whale-hf-export-'));
});
after(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('Hugging Face export and import', { skip }, () => {
  it('exports the math base policy as a folder transformers loads with the project\'s tokens and logits; import gives it back', async () => {
    const folder = path.join(dir, 'math-hf');
    const exported = await run([process.execPath, WHALE, 'export', MATH, '--format', 'hf', '--out', folder]);
    assert.equal(exported.code, 0, exported.stderr);
    const ck = decodeCheckpoint(readFileSync(MATH));
    const py = await run([HF_PYTHON, '-c', PY, folder], JSON.stringify(CONVERSATIONS));
    assert.equal(py.code, 0, py.stderr);
    const theirs = JSON.parse(py.stdout.trim().split('\n').pop() as string) as { template_ids: number[]; decoded: string; text_ids: number[]; logits: number[][]; arch: string }[];
    let worst = 0;
    let positions = 0;
    for (const [k, msgs] of CONVERSATIONS.entries()) {
      const ids = renderChatPrompt(msgs);
      assert.equal(theirs[k].arch, 'GPT2LMHeadModel');
      assert.deepEqual(theirs[k].template_ids, ids, `conversation ${k}: the exported chat template renders the project's prompt`);
      assert.deepEqual(theirs[k].text_ids, ids, `conversation ${k}: the tokenizer encodes the decoded text back to the same ids`);
      const mine = await projectLogits(ck.params, ck.config, ids);
      for (let t = 0; t < ids.length; t++) {
        for (let v = 0; v < ck.config.vocabSize; v++) worst = Math.max(worst, Math.abs(mine[t * ck.config.vocabSize + v] - theirs[k].logits[t][v]));
        positions++;
      }
    }
    console.log(`[hf] transformers (Python) logits vs the project's over ${positions} positions x ${ck.config.vocabSize} tokens: max |diff| ${worst.toExponential(2)}`);
    assert.ok(worst <= 1e-4, `logits differ by ${worst}`);

    const back = path.join(dir, 'back.ckpt');
    const imported = await run([process.execPath, WHALE, 'import', folder, '--out', back]);
    assert.equal(imported.code, 0, imported.stderr);
    const again = decodeCheckpoint(readFileSync(back));
    assert.deepEqual(again.config, ck.config);
    assert.ok(Buffer.from(again.params.buffer).equals(Buffer.from(ck.params.buffer)), 'the round trip keeps every weight bit for bit');

    await assert.rejects(importHfFolder(path.join(dir, 'nowhere')), /config\.json is missing/);
    mkdirSync(path.join(dir, 'qwen'));
    writeFileSync(path.join(dir, 'qwen', 'config.json'), JSON.stringify({ model_type: 'qwen2', vocab_size: 151936 }));
    await assert.rejects(importHfFolder(path.join(dir, 'qwen')), /model_type is "qwen2", not "gpt2".*serve other models through the OpenAI backend/);
  });
});
