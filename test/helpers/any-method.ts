import { request as httpRequest } from 'node:http';
import type { ApiResponse } from './client.js';

/** A request with any method over node:http (fetch refuses TRACE and others), as an ApiResponse. */
export function sendAnyMethod(
  baseUrl: string,
  method: string,
  path: string,
  options: { headers?: Record<string, string>; body?: string } = {},
): Promise<ApiResponse> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${baseUrl}${path}`, { method, headers: options.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const headers = new Headers();
        for (const [name, value] of Object.entries(res.headers)) {
          if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
        }
        const json = (res.headers['content-type'] ?? '').includes('json') && text !== '';
        resolve({
          status: res.statusCode!,
          body: json ? JSON.parse(text) : text,
          text,
          headers,
        });
      });
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/** The methods of an Allow header, sorted. */
export const allowOf = (res: ApiResponse): string[] =>
  (res.headers.get('allow') ?? '')
    .split(',')
    .map((m) => m.trim())
    .filter((m) => m !== '')
    .sort();
