"""Agreement of metrics with people, and of people with each other. Plain Python, no Django.

- protocol: the FENSE pairwise protocol (HC/HI/HM/MM): clips -> scoring plan -> accuracy report.
- statistics: Pearson / Spearman / Kendall tau-b with bootstrap CIs, caption and system level.
- inter_rater: Krippendorff's alpha (interval) for THumBS fields, ICC(2,k), rater bias.
"""
