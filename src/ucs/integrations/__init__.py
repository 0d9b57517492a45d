"""Drop-in UCS demonstration selection for the frameworks applications already use.

``ucs.integrations.langchain`` (extra ``langchain``): a LangChain ``BaseExampleSelector``.
``ucs.integrations.dspy`` (extra ``dspy``): a DSPy teleprompter. Both are backed
by :class:`ucs.SelectorIndex`.
"""
