export interface ApiResponse<T = any> {
  status: number;
  body: T;
  text: string;
  headers: Headers;
}

/** A small HTTP client over a real socket (fetch), with the bearer token it was given. */
export class ApiClient {
  constructor(
    readonly baseUrl: string,
    readonly token?: string,
  ) {}

  withToken(token: string): ApiClient {
    return new ApiClient(this.baseUrl, token);
  }

  async request<T = any>(
    method: string,
    path: string,
    options: { body?: unknown; rawBody?: string | Buffer; headers?: Record<string, string> } = {},
  ): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { ...options.headers };
    if (this.token !== undefined && headers.Authorization === undefined)
      headers.Authorization = `Bearer ${this.token}`;
    let body: string | Buffer | undefined = options.rawBody;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['Content-Type'] ??= 'application/json';
    }
    const res = await fetch(`${this.baseUrl}${path}`, { method, headers, body });
    const text = await res.text();
    let parsed: unknown = text;
    if ((res.headers.get('content-type') ?? '').includes('json') && text.length > 0)
      parsed = JSON.parse(text);
    return { status: res.status, body: parsed as T, text, headers: res.headers };
  }

  get<T = any>(path: string, headers?: Record<string, string>) {
    return this.request<T>('GET', path, headers === undefined ? {} : { headers });
  }
  post<T = any>(path: string, body?: unknown, headers?: Record<string, string>) {
    return this.request<T>('POST', path, {
      ...(body === undefined ? {} : { body }),
      ...(headers ? { headers } : {}),
    });
  }
  patch<T = any>(path: string, body?: unknown) {
    return this.request<T>('PATCH', path, body === undefined ? {} : { body });
  }
  put<T = any>(path: string, body?: unknown) {
    return this.request<T>('PUT', path, body === undefined ? {} : { body });
  }
  delete<T = any>(path: string) {
    return this.request<T>('DELETE', path);
  }
}
