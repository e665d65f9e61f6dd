import type { Config } from '../../platform/config.js';
import type { ChatEngine } from './engine.js';
import { IntakeAgentEngine } from '../../domain/intake/intake-agent.js';
import { OpenAiChatEngine } from './openai.js';

/** The configured chat engine: the LLM when OPENAI_API_KEY is set, else the built-in intake agent. */
export function createChatEngine(config: Config): ChatEngine {
  if (config.openaiApiKey !== undefined) {
    return new OpenAiChatEngine({
      apiKey: config.openaiApiKey,
      baseUrl: config.openaiBaseUrl,
      model: config.openaiModel,
    });
  }
  return new IntakeAgentEngine();
}
