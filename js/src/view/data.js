// Decoding the view model (kernelscope/render/view.py): a JSON header plus one buffer of
// little-endian typed-array columns. Columns are zero-copy views into the buffer.

export const MIME_TYPE = "application/vnd.kernelscope.report.v1+json";

const ARRAYS = { f64: Float64Array, f32: Float32Array, i32: Int32Array };

/** Columns of every table, from the header and an ArrayBuffer (8-byte aligned). */
export function decodeBuffer(header, buffer) {
  const tables = {};
  for (const [tname, t] of Object.entries(header.tables || {})) {
    const cols = {};
    const strings = {};
    for (const c of t.columns) {
      const Ctor = ARRAYS[c.type];
      cols[c.name] = new Ctor(buffer, c.offset, c.length);
      if (c.strings) strings[c.name] = c.strings;
    }
    tables[tname] = { rows: t.rows, cols, strings };
  }
  return { header, tables };
}

/** From a DataView/ArrayBuffer/Uint8Array as the widget model holds it. */
export function fromBytes(header, bytes) {
  let u8;
  if (bytes instanceof ArrayBuffer) u8 = new Uint8Array(bytes);
  else if (bytes && bytes.buffer) u8 = new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  else u8 = new Uint8Array(0);
  // Typed arrays need aligned offsets; copy when the transport handed us an unaligned view.
  const buffer = u8.byteOffset % 8 === 0 && u8.byteLength === u8.buffer.byteLength
    ? u8.buffer : u8.slice().buffer;
  return decodeBuffer(header, buffer);
}

/** From the MIME bundle entry: {header, encoding: "gzip+base64", data}. */
export async function fromMime(payload) {
  if (!payload || !payload.header) throw new Error("not a kernelscope report payload");
  const bin = atob(payload.data || "");
  const u8 = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) u8[i] = bin.charCodeAt(i);
  let buffer = u8.buffer;
  if (payload.encoding === "gzip+base64" && u8.length) {
    const stream = new Blob([u8]).stream().pipeThrough(new DecompressionStream("gzip"));
    buffer = await new Response(stream).arrayBuffer();
  }
  return decodeBuffer(payload.header, buffer);
}

/** The string a dictionary-encoded column holds at row i (null when missing). */
export function str(table, col, i) {
  const codes = table.cols[col];
  if (!codes) return null;
  const c = codes[i];
  return c >= 0 ? table.strings[col][c] : null;
}

/** An int32 column's value (null for the -1 "not recorded" marker). */
export function int(table, col, i) {
  const a = table.cols[col];
  if (!a) return null;
  const v = a[i];
  return v === -1 ? null : v;
}

/** A float column's value (null for NaN). */
export function num(table, col, i) {
  const a = table.cols[col];
  if (!a) return null;
  const v = a[i];
  return Number.isNaN(v) ? null : v;
}
