/**
 * Evals' simulated customer and rubric judge: pure modules the try lifecycle calls (what the
 * customer does when the task shows them something; the rubric's verdict after the task).
 * `createEvalModels` picks the scripted or the vendor versions.
 */
export {
  approves,
  CANNOT_SHARE,
  DONT_KNOW,
  scriptedAnswer,
  scriptedCustomer,
  secretToType,
  STEP_DONE,
  stepToClick,
  withoutSecrets,
  type CustomerAnswer,
  type CustomerFact,
  type CustomerModel,
  type CustomerQuestion,
  type SimulatedCustomer,
} from './customer';
export { rubricCriteria, scriptedJudge, scriptedVerdict, type CriterionVerdict, type RubricJudge, type RubricJudgeInput, type RubricVerdict } from './judge';
export { modelCustomer } from './model-customer';
export { modelJudge } from './model-judge';
export { askForJson, type JsonQuestion, type TextModel } from './json-completion';
export { OpenAITextModel } from './openai-text-model';
export { AnthropicTextModel } from './anthropic-text-model';
export { createEvalModels, type EvalModelOptions, type EvalModels } from './eval-models';
